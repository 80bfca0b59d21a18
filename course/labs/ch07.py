# %% [markdown]
# # Lab ch07 — which numbers did each head get?
#
# The reading (`course/ch07.md`) opens with a multi-head self-attention that runs for any
# shapes and returns `[B, T, E]` — and mixes positions into heads, lets the future leak into
# the past and cuts the sequence in two. This lab runs that program, looks at which numbers
# end up where, and then points what *you* write in `exercises/ch07/attention.py` at the same
# questions. Cells that call your code say `TODO` until you have written that part (the
# stub's `split_heads` holds the broken reshape, so it answers — wrongly — from the start).

# %%
import math
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

at = lab.module("ch07")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## Splitting heads (task ch07.1)
#
# In `x = arange(32).reshape(1, 4, 8)` position `t` holds `8t … 8t+7`.
#
# **Predict before you run the next cell.** Which numbers are in "head 0" of
# `x.reshape(1, 2, 4, 4)`, and in head 0 of `x.view(1, 4, 2, 4).transpose(1, 2)`?

# %%
my_guess = {"reshape head 0": None, "view + transpose head 0": None}

# %%
x = torch.arange(32).reshape(1, 4, 8)
wrong = x.reshape(1, 2, 4, 4)
right = x.view(1, 4, 2, 4).transpose(1, 2)
lab.check("reshape head 0", f"{wrong[0, 0].min().item()} … {wrong[0, 0].max().item()}")
lab.check("view + transpose head 0", f"{right[0, 0].tolist()}")
mine = lab.attempt(at.split_heads, x, 2)
if mine is not None:
    print("your split_heads, head 0:", mine[0, 0].tolist(), " shape", list(mine.shape))
    print(
        "  the reshape's head 0?",
        torch.equal(mine, wrong),
        " the right one?",
        torch.equal(mine, right),
    )

# %% [markdown]
# A round trip cannot tell them apart: the reshape's merge is the exact inverse of its split.

# %%
print("reshape, then reshape back, gives x:", torch.equal(wrong.reshape(1, 4, 8), x))

# %% [markdown]
# ## Merging heads (task ch07.2)
#
# `view` needs memory in order. The heads' output (`weights @ v`) is laid out head by head,
# so once it is transposed back to `[B, T, H, Dh]` it is not; on the very view `split_heads`
# returned, transposing back happens to restore the original order.

# %%
per_head = right.contiguous()  # laid out head by head, as weights @ v returns it
try:
    per_head.transpose(1, 2).view(1, 4, 8)
except RuntimeError as exc:
    print("view after the transpose:", str(exc).split(".")[0])
print("on split's own output it works:", torch.equal(right.transpose(1, 2).view(1, 4, 8), x))
merged = lab.attempt(at.merge_heads, per_head)
if merged is not None:
    print("your merge_heads gives x back:", torch.equal(merged, x))

# %% [markdown]
# ## The broken program
#
# Six tokens of eight features, two heads, the reshape split and the mask applied *after*
# the softmax.


# %%
def book_attention(x, qkv, H):
    B, T, E = x.shape
    causal = torch.ones(T, T).tril()  # 1 below the diagonal
    q, k, v = qkv(x).chunk(3, dim=-1)
    q, k, v = (t.reshape(B, H, T, E // H) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(E // H)
    weights = scores.softmax(dim=-1) * causal
    return (weights @ v).reshape(B, T, E), weights


def who_moves(fn, x):
    """For each output position, the input positions whose change moves it."""
    with torch.no_grad():
        base = fn(x)
        moved = {t: [] for t in range(x.shape[1])}
        for j in range(x.shape[1]):
            bumped = x.clone()
            bumped[:, j] += 1.0
            out = fn(bumped)
            for t in moved:
                if not torch.equal(out[:, t], base[:, t]):
                    moved[t].append(j)
    return moved


torch.manual_seed(0)
qkv = nn.Linear(8, 24)
x6 = torch.randn(1, 6, 8)

# %% [markdown]
# **Predict before you run the next cell.** Which input tokens move the output at token 0,
# and at token 3? How many of each head's six weight rows sum to 1?

# %%
my_guess = {"moves output 0": None, "moves output 3": None, "rows summing to 1": None}

# %%
moved = who_moves(lambda t: book_attention(t, qkv, 2)[0], x6)
for t, js in moved.items():
    print(f"output at token {t} moves when these tokens change: {js}")
lab.check("tokens that move the broken output 0", f"{moved[0]}")
lab.check("tokens that move the broken output 3", f"{moved[3]}")
with torch.no_grad():
    _, weights = book_attention(x6, qkv, 2)
print("weights.sum(-1):\n", weights.sum(-1))
ones = int((weights.sum(-1)[0, 0] - 1).abs().lt(1e-6).sum())
lab.check("rows of a head that sum to 1", f"{ones} of 6")

# %% [markdown]
# ## The causal mask (task ch07.3) and the two conventions

# %%
mask = lab.attempt(at.causal_mask, 4)
if mask is not None:
    print(mask.int())
    meta = lab.attempt(at.causal_mask, 4, "meta")
    if meta is not None:
        print("built on:", meta.device, meta.dtype)

# %% [markdown]
# **Predict before you run the next cell.** `allowed` is the lower triangle (True = may
# attend). Handed as a bool mask to `F.scaled_dot_product_attention` and to
# `nn.MultiheadAttention`, what does the *last* query get in each?

# %%
my_guess = {"sdpa, last row": None, "nn.MultiheadAttention, last row": None}

# %%
allowed = torch.ones(4, 4, dtype=torch.bool).tril()
torch.manual_seed(1)
q, k, v = (torch.randn(1, 1, 4, 2) for _ in range(3))
print(
    "sdpa with ~allowed, last row:",
    F.scaled_dot_product_attention(q, k, v, attn_mask=~allowed)[0, 0, -1].tolist(),
)
mha = nn.MultiheadAttention(2, 1, batch_first=True)
xs = torch.randn(1, 4, 2)
with torch.no_grad():
    out_mha, _ = mha(xs, xs, xs, attn_mask=allowed)
print(
    "nn.MultiheadAttention with allowed (True = blocked there), last row:", out_mha[0, -1].tolist()
)
by_hand = (q @ k.transpose(-2, -1)).masked_fill(allowed, float("-inf")).softmax(dim=-1)
print("hand-written softmax over all -inf, last row:", by_hand[0, 0, -1].tolist())

# %% [markdown]
# ## Scores, mask, softmax (tasks ch07.4 and ch07.5)
#
# Without the `1/√D` scale, the dot products of random vectors spread like `√D`:

# %%
gen = torch.Generator().manual_seed(0)
for D in (4, 64, 1024):
    a, b = torch.randn(2, 4000, D, generator=gen)
    print(f"D = {D:4}: std of q·k {(a * b).sum(-1).std().item():6.2f}   (√D = {math.sqrt(D):.0f})")

# %%
q, k, v = (torch.randn(1, 2, 5, 4, generator=gen) for _ in range(3))
causal5 = torch.ones(5, 5, dtype=torch.bool).tril()
w = lab.attempt(at.attention_weights, q, k, causal5)
if w is not None:
    print("rows sum to", w.sum(-1)[0, 0].tolist())
    print("upper triangle exactly 0:", bool((w[..., ~causal5] == 0).all()))
    k_loud = k.clone()
    toward = q[..., 2:3, :] / q[..., 2:3, :].pow(2).sum(-1, keepdim=True)  # (q·toward = 1)
    k_loud[..., 3:, :] = toward * 1000 * math.sqrt(4)  # query 2 scores keys 3 and 4 at 1000
    w_loud = lab.attempt(at.attention_weights, q, k_loud, causal5)
    if w_loud is not None:
        print(
            "row 2 with two loud future keys unchanged:",
            torch.equal(w_loud[..., 2, :3], w[..., 2, :3]),
        )
out = lab.attempt(at.attention, q, k, v, causal5)
if out is not None:
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal5)
    print(
        f"largest difference from F.scaled_dot_product_attention: {(out - ref).abs().max().item():.1e}"
    )

# %% [markdown]
# ## Multi-head self-attention (task ch07.6)
#
# **Predict before you run the next cell.** With your module, which tokens move the output at
# token 0, and at token 3?

# %%
my_guess = {"moves output 0": None, "moves output 3": None}

# %%
attn = lab.attempt(at.MultiHeadSelfAttention, 8, 2)
if attn is not None:
    with torch.no_grad():
        attn.qkv.weight.copy_(qkv.weight)
        attn.qkv.bias.copy_(qkv.bias)
    mine = lab.attempt(who_moves, attn, x6)
    if mine is not None:
        lab.check("tokens that move output 0", f"{mine[0]}")
        lab.check("tokens that move output 3", f"{mine[3]}")
        ref = nn.MultiheadAttention(8, 2, batch_first=True)
        with torch.no_grad():
            ref.in_proj_weight.copy_(attn.qkv.weight)
            ref.in_proj_bias.copy_(attn.qkv.bias)
            ref.out_proj.weight.copy_(attn.proj.weight)
            ref.out_proj.bias.copy_(attn.proj.bias)
            blocked = ~torch.ones(6, 6, dtype=torch.bool).tril()  # its convention
            expected, _ = ref(x6, x6, x6, attn_mask=blocked)
            got = lab.attempt(attn, x6)
        if got is not None:
            print(
                f"largest difference from nn.MultiheadAttention: {(got - expected).abs().max().item():.1e}"
            )
            print(
                "last_weights rows sum to",
                [round(s, 4) for s in attn.last_weights.sum(-1)[0, 0].tolist()],
            )

# %%
import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(1, 2, figsize=(5.5, 2.6))
axes[0].imshow(weights[0, 0], vmin=0, vmax=1)
axes[0].set_title("broken: head 0 weights", fontsize=9)
if attn is not None and getattr(attn, "last_weights", None) is not None:
    axes[1].imshow(attn.last_weights[0, 0], vmin=0, vmax=1)
axes[1].set_title("yours: head 0 weights", fontsize=9)
for ax in axes:
    ax.set_xlabel("key")
    ax.set_ylabel("query")
fig.tight_layout()
fig.savefig(lab.figure_path("ch07_causal_mask.png"), dpi=80)
plt.show()

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch07` runs them:

# %%
lab.run_tests("ch07")
