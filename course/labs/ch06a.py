# %% [markdown]
# # Lab ch06a — one score per review, and what 768 dimensions do to geometry
#
# The reading (`course/ch06a.md`) puts `nn.Linear(768, 1)` on a padded batch of reviews and
# averages: it runs, and the result is neither one score per review nor free of padding.
# This lab runs that program, then points what *you* write in
# `exercises/ch06a/feature_space.py` at it — the masked mean, the repaired
# `sequence_scores`, the hinge, a linear SVM and the distance contrast. Cells that call your
# code say `TODO` until you have written that part.

# %%
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

fs = lab.module("ch06a")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# Eight reviews padded to 128 positions of 768 features; review 0 has 7 tokens.

# %%
g = torch.Generator().manual_seed(0)
B, T, E = 8, 128, 768
lengths = torch.tensor([7, 128, 40, 3, 90, 128, 15, 64])
mask = torch.arange(T) < lengths[:, None]  # (8, 128), False at padding
embeddings = torch.randn(B, T, E, generator=g) * mask[..., None]  # zeros at padding
y = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0])  # (8,)
torch.manual_seed(0)
head = nn.Linear(E, 1)

# %% [markdown]
# **Predict before you run the next cell.** The shapes of `head(x)`, of `head(x).mean(dim=1)`
# and of the per-example hinge `max(0, 1 − y·s)` computed from them? What share of review 0's
# pooled score comes from padding?

# %%
my_guess = {"head(x)": None, "after mean(dim=1)": None, "hinge table": None, "padding share": None}

# %%
x = embeddings
per_position = head(x)
scores = per_position.mean(dim=1)  # meant: one score per review
table = torch.clamp(1 - y * scores, min=0)  # the hinge, written out
lab.check("head(x) shape", f"{list(per_position.shape)}")
lab.check("after mean(dim=1)", f"{list(scores.shape)}")
lab.check("the hinge of [8, 1] against [8]", f"{list(table.shape)}")
lab.check("review 0's padding share", f"{T - lengths[0].item()}/{T}")
with torch.no_grad():
    valid = per_position[0, : lengths[0]].mean().item()
print(
    f"review 0: pooled over 128 positions {scores[0].item():+.4f}, over its 7 tokens {valid:+.4f}"
)
print(
    f"every padded position scores the bias alone: {per_position[0, 100].item():+.4f} "
    f"= {head.bias.item():+.4f}"
)

# %% [markdown]
# The stub of `sequence_scores` holds this same program (task ch06a.2 repairs it):

# %%
out = lab.attempt(fs.sequence_scores, x, mask, head)
if out is not None:
    print("sequence_scores gives shape", list(out.shape))

# %% [markdown]
# ## Padding must not count (task ch06a.1)
#
# **Predict before you run the next cell.** Fill review 0's padding with `1e30`, `inf` or
# `nan`. What do "multiply by the mask" and "sum everything, subtract the padding" give for
# its mean over the valid positions?

# %%
my_guess = {"mask multiply with inf": None, "sum minus padding with 1e30": None}

# %%
small = torch.randn(2, 6, 3, generator=g)
small_mask = torch.tensor([[True] * 3 + [False] * 3, [True] * 6])
truth = small[0, :3].mean(dim=0)
print("true mean of row 0:", [round(v, 4) for v in truth.tolist()])
for fill in (1e30, float("inf"), float("nan")):
    filled = torch.where(small_mask[..., None], small, torch.tensor(fill))
    times = (filled * small_mask[..., None]).sum(dim=1)[0] / 3
    minus = (filled.sum(dim=1)[0] - filled[0, 3:].sum(dim=0)) / 3
    mine = lab.attempt(fs.masked_mean, filled, small_mask, 1)
    line = f"fill {fill:g}: x * mask -> {[round(v, 4) for v in times.tolist()]}, "
    line += f"sum - padding -> {[round(v, 4) for v in minus.tolist()]}"
    if mine is not None:
        line += f", masked_mean -> {[round(v, 4) for v in mine[0].tolist()]}"
    print(line)
print("inf * 0 and nan * 0:", (torch.tensor([float("inf"), float("nan")]) * 0).tolist())

# %% [markdown]
# The gradient must not reach the padding, and must not be `nan` anywhere:

# %%
leaf = torch.where(small_mask[..., None], small, torch.tensor(float("inf"))).requires_grad_()
mean = lab.attempt(fs.masked_mean, leaf, small_mask, 1)
if mean is not None:
    mean.sum().backward()
    print("gradient at row 0's padding:", leaf.grad[0, 3:].flatten().tolist())
    print("gradient at row 0's tokens: ", [round(v, 4) for v in leaf.grad[0, :3, 0].tolist()])

# %% [markdown]
# ## One score per example (task ch06a.2)

# %%
fixed = lab.attempt(fs.sequence_scores, x, mask, head)
if fixed is not None and fixed.shape == (B,):
    with torch.no_grad():
        loop = torch.stack([head(x[b, : lengths[b]]).mean() for b in range(B)])
    print(
        "shape",
        list(fixed.shape),
        "; largest difference from a per-review loop:",
        f"{(fixed - loop).abs().max().item():.1e}",
    )
    noisy = torch.where(mask[..., None], x, torch.tensor(float("nan")))
    again = lab.attempt(fs.sequence_scores, noisy, mask, head)
    if again is not None:
        print("with nan in every padded slot, unchanged:", torch.equal(again, fixed))

# %% [markdown]
# ## The hinge (task ch06a.3)

# %%
s = torch.tensor([2.0, 0.5, 0.0, -1.0])
labels = torch.ones(4)
hinge = lab.attempt(fs.hinge_loss, s, labels, "none")
if hinge is not None:
    for si, li in zip(s.tolist(), hinge.tolist()):
        print(f"y = +1, score {si:+.1f}: hinge {li:.2f}")


def the_books_shapes():
    """hinge_loss on scores [8, 1] against labels [8]: refused, or a table?"""
    try:
        loss = fs.hinge_loss(scores.detach(), y)
    except ValueError as exc:
        return f"refused with ValueError: {exc}"
    return f"accepted; the loss was computed over a {list(loss.shape)} result"


print(lab.attempt(the_books_shapes))

# %% [markdown]
# ## A linear SVM (task ch06a.4)
#
# **Predict before you run the next cell.** Forty points in 200 dimensions, labels by coin
# flip. Training accuracy of the SVM? Accuracy on forty fresh points labelled the same way?

# %%
my_guess = {"training accuracy": None, "fresh-point accuracy": None}

# %%
X = torch.randn(40, 200, generator=g)
coin = torch.where(torch.rand(40, generator=g) < 0.5, -1.0, 1.0)
fitted = lab.attempt(fs.train_linear_svm, X, coin, 1.0)
if fitted is not None:
    w, b = fitted
    train_acc = ((X @ w + b).sign() == coin).float().mean().item()
    X_new = torch.randn(40, 200, generator=g)
    coin_new = torch.where(torch.rand(40, generator=g) < 0.5, -1.0, 1.0)
    new_acc = ((X_new @ w + b).sign() == coin_new).float().mean().item()
    lab.check("training accuracy on coin-flip labels", f"{train_acc:.0%}")
    print(f"fresh points: {new_acc:.0%} (noise is noise)")

# %% [markdown]
# Two classes split by the gap (−2, 2) along axis 0, with points further out pulling in other
# directions: the widest-margin plane is `w = (0.5, 0, …), b = 0`, margin `1/||w|| = 2`.

# %%
Xm = torch.zeros(6, 30)
Xm[0, 0], Xm[1, 0] = 2.0, -2.0
Xm[2, :2] = torch.tensor([5.0, 3.0])
Xm[3, :3] = torch.tensor([-4.0, 0.0, -1.0])
Xm[4, :4] = torch.tensor([3.0, 0.0, 0.0, 2.0])
Xm[5, 0] = -6.0
ym = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
margin = lab.attempt(fs.train_linear_svm, Xm, ym, 1.0)
if margin is not None:
    w, b = margin
    print(
        f"w[0] {w[0].item():.3f}, largest |w[1:]| {w[1:].abs().max().item():.3f}, b {b:.3f}, "
        f"margin 1/||w|| {1 / w.norm().item():.3f}"
    )

# %% [markdown]
# ## When distances stop meaning much (task ch06a.5)
#
# **Predict before you run the next cell.** 100 uniform points in `[0, 1]^d`: how much farther
# is the farthest pair than the nearest, for d = 2, 10, 100, 1000?

# %%
my_guess = {"d=2": None, "d=10": None, "d=100": None, "d=1000": None}

# %%
contrast = lab.attempt(
    fs.distance_concentration, [2, 10, 100, 1000], 100, torch.Generator().manual_seed(0)
)
if contrast is not None:
    c2, c10, c100, c1000 = contrast
    lab.check(
        "relative contrast, d = 2, 10, 100, 1000",
        f"{c2:.0f}, {c10:.1f}, {c100:.2f} and {c1000:.2f}",
    )

# %% [markdown]
# The same measurement on squared distances (written here, not your code) exaggerates it:

# %%
pts = torch.rand(100, 1000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
dist = torch.pdist(pts)  # (4950,) distinct pairs
plain = ((dist.max() - dist.min()) / dist.min()).item()
squared = ((dist.max() ** 2 - dist.min() ** 2) / dist.min() ** 2).item()
lab.check("contrast at d = 1000, squares vs distances", f"{squared:.2f} instead of {plain:.2f}")

# %%
import matplotlib.pyplot as plt  # noqa: E402

dims = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
curve = lab.attempt(fs.distance_concentration, dims, 100, torch.Generator().manual_seed(0))
if curve is not None:
    fig, ax = plt.subplots(figsize=(4, 2.6))
    ax.loglog(dims, curve, marker=".")
    ax.set_xlabel("dimension d")
    ax.set_ylabel("(max - min) / min")
    fig.tight_layout()
    fig.savefig(lab.figure_path("ch06a_distance_concentration.png"), dpi=80)
    plt.show()

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch06a` runs them:

# %%
lab.run_tests("ch06a")
