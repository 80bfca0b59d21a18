# %% [markdown]
# # Lab ch10 — what exactly was the model asked to predict?
#
# The reading (`course/ch10.md`) opens with a batch function behind "the best run ever":
# a training loss near zero from a character model of English. This lab looks at that
# batch, trains the GPT *you* build in `exercises/ch10/gpt.py` on it and on the repaired
# batch, and asks both models the question that matters. To stay fast it uses the
# smallest configuration the reading quotes, the tests' (2 layers, 4 heads, 32
# dimensions, 150 steps), not the figure's. Cells that call your code say `TODO` until you
# have written that part; nothing here stops.

# %%
import collections
import math
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

gpt = lab.module("ch10")  # your module (set COURSE_IMPL=solutions to see the reference)
TEXT = (root / "course" / "data" / "ch10_corpus.txt").read_text(encoding="utf-8")
SMALL = dict(steps=150, block_size=32, batch_size=16, n_layer=2, n_head=4, n_embd=32, lr=3e-3)

# %% [markdown]
# ## Know the floor
#
# Before any training: what does "no learning" cost on this corpus?

# %%
counts = collections.Counter(TEXT)
unigram = -sum(c / len(TEXT) * math.log(c / len(TEXT)) for c in counts.values())
print(f"{len(TEXT)} characters, {len(counts)} distinct")
print(f"uniform guess ln V = {math.log(len(counts)):.2f} nats; unigram entropy {unigram:.2f} nats")
lab.check("ln V", f"{math.log(len(counts)):.2f}")
lab.check("unigram entropy", f"{unigram:.2f}")

# %% [markdown]
# ## The broken program


# %%
def books_get_batch(data, block_size, batch_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    y = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    return x, y


x, y = books_get_batch(torch.arange(100), 8, 2, torch.Generator().manual_seed(0))
print("x[0]:", x[0].tolist())
print("y[0]:", y[0].tolist())

# %% [markdown]
# **Predict before you run the next cell.** Trained on these batches, how low does the
# training loss go? And what is the loss on the character that really comes next — above
# or below the uniform guess of 4.03?

# %%
my_guess = {"training loss, last 10 steps": None, "loss on the true next characters": None}


# %%
def true_next_loss(model, data, block_size):
    """Cross-entropy on the true next tokens of data, in consecutive windows."""
    n = (len(data) - 1) // block_size
    xs = data[: n * block_size].view(n, block_size)
    ys = data[1 : n * block_size + 1].view(n, block_size)
    with torch.no_grad():
        logits, _ = model(xs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ys.reshape(-1)).item()


def report(name, run):
    last10 = sum(run.train_losses[-10:]) / 10
    true = true_next_loss(run.model, run.val_data, SMALL["block_size"])
    print(f"{name}: first loss {run.train_losses[0]:.2f}, last 10 steps {last10:.4f}")
    print(f"{'':<{len(name)}}  val loss, its own targets {run.val_loss:.4f}; true next {true:.2f}")
    return last10, true


copy_run = lab.attempt(gpt.train_gpt, TEXT, seed=0, batch_fn=books_get_batch, **SMALL)
if copy_run is not None:
    last10, true = report("copy targets", copy_run)
    lab.check("copy targets, training loss", f"{last10:.2f}")
    lab.check("copy targets, loss on the true next tokens", f"{true:.1f}")

# %% [markdown]
# Far below the unigram entropy in training, and far *above* a uniform guess on the task
# we care about. What does it write after `"The keeper "`?

# %%
if copy_run is not None:
    tok = copy_run.tokenizer
    prompt = torch.tensor([tok.encode("The keeper ")])
    out = lab.attempt(
        gpt.generate, copy_run.model, prompt, 40, 0.8, torch.Generator().manual_seed(0)
    )
    if out is not None:
        print(repr(tok.decode(out[0])))

# %% [markdown]
# ## Characters become ids (task ch10.1)

# %%
tok = lab.attempt(gpt.CharTokenizer, TEXT)
if tok is not None:
    ids = tok.encode("The keeper ")
    print("vocab_size", tok.vocab_size, "ids", ids, "back:", repr(tok.decode(ids)))
    print("decode accepts a tensor:", repr(tok.decode(torch.tensor(ids))))
    try:
        tok.encode("€")
        print("a character outside the vocabulary was accepted")
    except Exception as exc:  # noqa: BLE001 - any refusal will do
        print("outside the vocabulary:", type(exc).__name__)

# %% [markdown]
# ## Batches and the shift (task ch10.2)
#
# Your `get_batch` still holds the book's function. On `arange`, a right batch is
# simply `y == x + 1`.

# %%
g = torch.Generator().manual_seed(0)
x, y = gpt.get_batch(torch.arange(100), 8, 2, g)
print("x[0]:", x[0].tolist())
print("y[0]:", y[0].tolist())
print("y == x + 1 everywhere:", torch.equal(y, x + 1))

# %% [markdown]
# ## Checking the targets (task ch10.3)
#
# **Predict before you run the next cell.** What shift does each batch have? Which is
# `ok`? (The last has one row misaligned.)

# %%
data = torch.arange(100)
x, y = books_get_batch(data, 8, 3, torch.Generator().manual_seed(0))
batches = {
    "book's batch": (x, y),
    "next-token": (x, x + 1),
    "skips a token": (x, x + 2),
    "predicts the past": (x, x - 1),
    "one row copied": (x, torch.cat([x[:1], x[1:] + 1])),
}
my_guess = {name: None for name in batches}

# %%
for name, (bx, by) in batches.items():
    found = lab.attempt(gpt.check_targets, bx, by)
    if found is None:
        break
    print(f"{name:<18} ok {found.ok!s:<5} shift {found.shift!s:<4} {found.message}")

# %% [markdown]
# ## Causal self-attention (task ch10.4)
#
# Two slips that run without an error. A mask filled with 0 instead of `-inf` before the
# softmax gives every future position the weight `e⁰ = 1`; a `reshape` to `(B, H, T, Dh)`
# instead of `view(B, T, H, Dh).transpose(1, 2)` mixes positions into heads.

# %%
scores = torch.zeros(4, 4)
future = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
print("fill -inf, row 0:", scores.masked_fill(future, float("-inf")).softmax(-1)[0].tolist())
print("fill 0,    row 0:", scores.masked_fill(future, 0.0).softmax(-1)[0].tolist())
q = torch.arange(3 * 4).view(1, 3, 4)  # B=1, T=3 positions, C=4 channels, 2 heads of 2
print("head 0 by view+transpose:", q.view(1, 3, 2, 2).transpose(1, 2)[0, 0].tolist())
print("head 0 by reshape:       ", q.reshape(1, 2, 3, 2)[0, 0].tolist())

# %% [markdown]
# Now your layer: change the last two positions and watch the earlier outputs.

# %%
torch.manual_seed(0)
attn = lab.attempt(gpt.CausalSelfAttention, 16, 4, 8)
if attn is not None:
    attn.eval()
    a = torch.randn(1, 8, 16)
    b = a.clone()
    b[:, 6:] = torch.randn(1, 2, 16)
    with torch.no_grad():
        moved = (attn(a) - attn(b)).abs().amax(dim=-1)[0]
    print("largest change per position:", [f"{v:.1e}" for v in moved.tolist()])

# %% [markdown]
# ## The block (task ch10.5)
#
# Pre-norm: nothing normalizes the residual stream itself, so a constant added to every
# channel of the input comes out added to the output.

# %%
torch.manual_seed(0)
block = lab.attempt(gpt.Block, 16, 4, 8)
if block is not None:
    block.eval()
    a = torch.randn(2, 8, 16)
    with torch.no_grad():
        shift = (block(a + 3.0) - block(a)).mean().item()
    print(f"input + 3 moves the output by {shift:.4f}")

# %% [markdown]
# ## The model (task ch10.6)
#
# **Predict before you run the next cell.** A freshly built GPT: what loss on a batch of
# the corpus? Does a plain Python list of blocks show up in `parameters()`?

# %%
my_guess = {"loss at initialization": None, "a plain list's parameters": None}


# %%
class ListHolder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [nn.Linear(4, 4)]  # a plain list: not registered


print("parameters seen through a plain list:", len(list(ListHolder().parameters())))
if tok is not None:
    torch.manual_seed(0)
    model = lab.attempt(gpt.GPT, tok.vocab_size, 32, 2, 4, 32)
    if model is not None:
        data = torch.tensor(tok.encode(TEXT))
        bx = data[:320].view(10, 32)
        by = data[1:321].view(10, 32)
        logits, loss = model(bx, by)
        print(f"logits {tuple(logits.shape)}, loss at initialization {loss.item():.2f}")
        print(f"ln V = {math.log(tok.vocab_size):.2f}")

# %% [markdown]
# ## Training and generating (tasks ch10.7, ch10.8)
#
# The same model, the same seed, the repaired batches (your `get_batch`, the default).

# %%
run = lab.attempt(gpt.train_gpt, TEXT, seed=0, **SMALL)
if run is not None:
    last10, true = report("next-token targets", run)
    if true < 4:
        lab.check("first loss", f"{run.train_losses[0]:.2f}")
        lab.check("next-token targets, val loss", f"{run.val_loss:.2f}")
        lab.check("next-token targets, loss on the true next tokens", f"{true:.2f}")
    tok = run.tokenizer
    prompt = torch.tensor([tok.encode("The keeper ")])
    out = lab.attempt(gpt.generate, run.model, prompt, 40, 0.8, torch.Generator().manual_seed(0))
    if out is not None:
        print(repr(tok.decode(out[0])))
        long_prompt = torch.tensor([tok.encode(TEXT[:40])])  # longer than block_size 32
        print("a 40-token prompt gives", tuple(gpt.generate(run.model, long_prompt, 3).shape))

# %%
if run is not None and copy_run is not None:
    fig, ax = plt.subplots(figsize=(5.5, 3))
    ax.plot(run.train_losses, label="next-token targets")
    ax.plot(copy_run.train_losses, label="copy targets")
    ax.axhline(math.log(len(counts)), color="grey", ls=":", label="ln V")
    ax.axhline(unigram, color="grey", ls="--", label="unigram entropy")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=7)
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch10` runs them (the two long training
# tests take a few seconds each):

# %%
lab.run_tests("ch10")
