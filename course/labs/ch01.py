# %% [markdown]
# # Lab ch01 — the shape that was legal and wrong
#
# The reading (`course/ch01.md`) opens with a linear regression that trains without a
# complaint and learns nothing. This lab runs it, asks for your predictions first, and
# then points the tools *you* write in `exercises/ch01/shapes.py` at it: a broadcasting
# rule by hand, a shape tracer, and a view check. A cell that calls your code prints
# `TODO` until you have written that part; the notebook still runs to its end.

# %%
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from harness import lab  # noqa: E402

sh = lab.module("ch01")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# Three features, 64 examples, `y` of shape `(64,)`, SGD at learning rate 0.1 for 300
# steps (seed 0, as in the reading's figure). `fit(broken=False)` is the same run with
# the target `y[:, None]`.
#
# **Predict before you run the next cell.** What shape is `layer(x) - y`? What loss does
# the broken run settle at, and what does the trained model predict for `x = [2.5, 0, 0]`,
# whose true target is about 5?


# %%
def fit(broken: bool, steps: int = 300):
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([2.0, -1.0, 0.5]) + 0.1 * torch.randn(64)  # y: (64,)
    layer = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    target = y if broken else y[:, None]
    for _ in range(steps):
        loss = ((layer(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return layer, x, y, loss.item()


# %%
my_guess = {"shape of layer(x) - y": None, "broken loss": None, "prediction at [2.5, 0, 0]": None}

# %%
layer, x, y, loss = fit(broken=True)
probe = torch.tensor([[2.5, 0.0, 0.0]])
with torch.no_grad():
    print("layer(x):", tuple(layer(x).shape), " y:", tuple(y.shape))
    print("layer(x) - y:", tuple((layer(x) - y).shape))
    print("learned weight:", [f"{v:.1e}" for v in layer.weight[0].tolist()])
    lab.check("the broken run's final loss", f"{loss:.2f}")
    lab.check("variance of y (biased)", f"{y.var(unbiased=False).item():.2f}")
    lab.check("mean of y", f"{y.mean().item():.2f}")
    lab.check("broken prediction at [2.5, 0, 0]", f"{layer(probe).item():.2f}")
    broken_pred = layer(x)[:, 0]

fixed_layer, _, _, fixed_loss = fit(broken=False)
with torch.no_grad():
    lab.check("the fixed run's final loss", f"{fixed_loss:.3f}")
    print(f"fixed prediction at [2.5, 0, 0]: {fixed_layer(probe).item():.2f}")
    fixed_pred = fixed_layer(x)[:, 0]

fig, ax = plt.subplots(figsize=(4, 3))
ax.scatter(y, fixed_pred, s=8, label="target y[:, None]")
ax.scatter(y, broken_pred, s=8, label="target y (broken)")
ax.set_xlabel("target")
ax.set_ylabel("prediction")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# The broken model is a flat line at the mean of `y`: that is what minimizes the mean of
# every prediction compared with every target.
#
# ## The broadcasting rule (task ch01.1)
#
# Your `broadcast_shape` next to `torch.broadcast_shapes`, on the reading's table:


# %%
def yours(a, b):
    try:
        return sh.broadcast_shape(a, b)
    except ValueError as exc:
        return f"ValueError: {exc}"


table = [((8, 1, 6, 1), (7, 1, 5)), ((2, 3), (3,)), ((64, 1), (64,)), ((0,), (1,)), ((5, 3), (4,))]
for a, b in table:
    try:
        torch_says = tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        torch_says = "error"
    print(f"{a} with {b}: torch {torch_says}")
    mine = lab.attempt(yours, a, b)
    if mine is not None:
        print(f"    yours {mine}")

# %% [markdown]
# ## Every row against every row (task ch01.2)
#
# With `N == M` the one-liner `((x - y) ** 2).sum(-1)` runs and gives only the diagonal.
# The expanded form `|x|² + |y|² − 2 x·y` is legal too; watch what cancellation does to it
# when the points sit close together far from the origin.

# %%
torch.manual_seed(0)
a = torch.randn(6, 3) * 0.01 + 1000
b = torch.randn(6, 3) * 0.01 + 1000
exact = ((a.double()[:, None] - b.double()[None]) ** 2).sum(-1)
print("one-liner shape:", tuple(((a - b) ** 2).sum(-1).shape))
expanded = (a**2).sum(-1)[:, None] + (b**2).sum(-1)[None] - 2 * a @ b.T
print(f"largest true distance {exact.max().item():.4f}")
print(f"expanded form, worst error {(expanded - exact).abs().max().item():.4f}")
d = lab.attempt(sh.pairwise_sq_dists, a, b)
if d is not None:
    print(f"yours, shape {tuple(d.shape)}, worst error {(d - exact).abs().max().item():.2e}")

# %% [markdown]
# ## The weight convention (task ch01.3)
#
# In a square layer `x @ W` runs and is wrong; only `F.linear` says what is right.

# %%
torch.manual_seed(0)
xs, W, bias = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)
print(
    f"x @ W + b differs from F.linear by {(xs @ W + bias - F.linear(xs, W, bias)).abs().max():.3f}"
)
out = lab.attempt(sh.batch_linear, xs, W, bias)
if out is not None:
    print(f"yours differs by {(out - F.linear(xs, W, bias)).abs().max():.2e}")

# %% [markdown]
# ## Tracing shapes (tasks ch01.4 and ch01.5)
#
# Your tracer on one step of the broken loss, and the first op whose shape is not the
# one we meant.

# %%
trace = lab.attempt(sh.trace_shapes, lambda a, b: ((layer(a) - b) ** 2).mean(), x, y)
for i, (name, shape) in enumerate(trace or []):
    print(f"op {i}: {name:<8} {shape}")
expected = [(64, 1), (64, 1), (64, 1), ()]
if trace is not None:
    at = lab.attempt(sh.first_divergence, trace, expected)
    if at is not None:
        lab.check("first divergence", f"op {at}")
        print("that op is", trace[at][0])

# %% [markdown]
# ## Views and strides (task ch01.6)

# %%
t = torch.arange(12.0).reshape(3, 4)
print("strides of t:", t.stride(), " of t.t():", t.t().stride())
try:
    t.t().view(12)
except RuntimeError as exc:
    lab.check(".view on the transpose raises", str(exc).split(" (")[0])
for name, other in [
    ("t[1:]", t[1:]),
    ("t.t()", t.t()),
    ("t.t().reshape(12)", t.t().reshape(12)),
    ("t.contiguous()", t.contiguous()),
    ("t.clone()", t.clone()),
]:
    same_start = other.data_ptr() == t.data_ptr()
    print(
        f"{name:<18} same data_ptr: {same_start!s:<5}  is_view_of: {lab.attempt(sh.is_view_of, other, t)}"
    )

# %% [markdown]
# ## Repairing the view (task ch01.7)
#
# **Predict before you run the next cell.** The `.view` raises. If we follow its advice and
# use `.reshape`, what are the channel means of `x` afterwards? And with `x.view(C, -1)`?

# %%
my_guess = {"channel means after the reshape fix": None, "after the x.view(C, -1) fix": None}


# %%
def batch(seed=0):
    torch.manual_seed(seed)
    return torch.randn(2, 3, 4, 4) * torch.tensor([1.0, 5.0, 10.0])[:, None, None] + 3


def with_reshape(x, eps=1e-5):
    C = x.shape[1]
    flat = x.transpose(0, 1).reshape(C, -1)
    flat.sub_(flat.mean(1, keepdim=True)).div_(
        torch.sqrt(flat.var(1, unbiased=False, keepdim=True) + eps)
    )
    return x


def without_transpose(x, eps=1e-5):
    C = x.shape[1]
    flat = x.view(C, -1)
    flat.sub_(flat.mean(1, keepdim=True)).div_(
        torch.sqrt(flat.var(1, unbiased=False, keepdim=True) + eps)
    )
    return x


def channel_stats(x):
    means = x.mean(dim=(0, 2, 3)).tolist()
    stds = x.std(dim=(0, 2, 3), unbiased=False).tolist()
    return (
        "means "
        + " ".join(f"{m:6.2f}" for m in means)
        + "  stds "
        + " ".join(f"{s:5.2f}" for s in stds)
    )


print("before:           ", channel_stats(batch()))
print("reshape fix:      ", channel_stats(with_reshape(batch())))
print("x.view(C, -1) fix:", channel_stats(without_transpose(batch())))
x_img = batch()
storage = x_img.untyped_storage().data_ptr()
done = lab.attempt(sh.standardize_channels_, x_img)
if done is not None:
    print("your repair:      ", channel_stats(x_img))
    print(
        "same memory as before:",
        x_img.untyped_storage().data_ptr() == storage,
        " returned x:",
        done is x_img,
    )
    reference = F.batch_norm(batch(), None, None, training=True, eps=1e-5)
    print(f"differs from F.batch_norm by {(x_img - reference).abs().max():.1e}")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch01` runs them:

# %%
lab.run_tests("ch01")
