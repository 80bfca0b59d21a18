# %% [markdown]
# # Lab ch00 — one parameter, one loss, one update
#
# The reading (`course/ch00.md`) opens with a training loop that runs, prints a falling
# loss, and is wrong in two ways that never raise. This lab runs that loop on the data of
# the reading's curves, asks for your prediction before each reveal, and then points the
# functions *you* write in `exercises/ch00/training_loop.py` at the same data. A cell that
# calls your code prints `TODO` until you have written that part; the notebook still runs
# to its end.

# %%
import math
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from harness import lab  # noqa: E402

tl = lab.module("ch00")  # your module (set COURSE_IMPL=solutions to see the reference)

XS, YS = [1.0, 2.0, 3.0, 4.0], [5.0, 10.0, 15.0, 20.0]  # y = 5x: the best w is 5
x, y = torch.tensor(XS), torch.tensor(YS)

# %% [markdown]
# ## The broken program
#
# This is the loop from the top of the reading, with `w0 = 0`, `lr = 0.01` and 40 steps.
# It also notes `w.grad` right after each `backward()`.
#
# **Predict before you run the next cell.** What are the first four losses roughly? After
# 40 steps, is `w` close to 5? And how large is `w.grad` on step 3, compared with the
# `-75` of step 0?

# %%
my_guess = {"first four losses": None, "w after 40 steps": None, "w.grad at step 3": None}

# %%
w = torch.tensor(0.0, requires_grad=True)
ws, losses, grads = [], [], []
for _ in range(40):
    loss = ((w * x - y) ** 2).mean()
    loss.backward()
    grads.append(w.grad.item())
    with torch.no_grad():
        w -= 0.01 * w.grad
    ws.append(w.item())
    losses.append(loss.item())

for k in range(9):
    print(f"step {k}: loss {losses[k]:8.3f}  w.grad {grads[k]:9.3f}  ws[{k}] {ws[k]:.3f}")
lab.check("first four losses", ", ".join(f"{v:.3f}" for v in losses[:4]))
lab.check("w.grad after step 3's backward", f"{grads[3]:.3f}")
lab.check("lowest loss of the first swing (step 4)", f"{losses[4]:.3f}")
lab.check("loss at step 8", f"{losses[8]:.3f}")
print(f"w ranges over [{min(ws):.3f}, {max(ws):.3f}]; after 40 steps w = {ws[-1]:.3f}")

fig, ax = plt.subplots(figsize=(5, 2.6))
ax.plot(losses, marker=".")
ax.set_xlabel("step")
ax.set_ylabel("loss")
ax.set_title("the broken loop, lr = 0.01")
fig.tight_layout()
plt.show()

# %% [markdown]
# The loss did go down — for four steps. `backward()` *adds* into `w.grad`, so every step
# pushes with the sum of all earlier gradients: `w` overshoots 5, comes back, overshoots
# again, and never settles.
#
# The second bug hides in the table above: `ws[k]` is the weight *after* update k, while
# `losses[k]` is the loss *before* it. Recompute each row's loss from its own `ws[k]`:

# %%
recomputed = [((wk * x - y) ** 2).mean().item() for wk in ws]
disagree = sum(not math.isclose(a, b, rel_tol=1e-6) for a, b in zip(recomputed, losses))
print(f"row 0: losses[0] = {losses[0]:.3f}, but ws[0] = {ws[0]} gives {recomputed[0]:.3f}")
lab.check("rows where ws[k] and losses[k] disagree", f"{disagree} of {len(ws)}")

# %% [markdown]
# Why the update sits under `torch.no_grad()`: without it, the in-place update of a leaf
# that requires grad is refused outright.

# %%
w = torch.tensor(0.0, requires_grad=True)
try:
    w -= 0.01
except RuntimeError as exc:
    print(f"{type(exc).__name__}: {exc}")

# %% [markdown]
# ## One gradient (task ch00.1)
#
# At `w = 1, x = 2, t = 6` the chain rule gives `2 · 2 · (2 − 6) = −16`. Your
# `gradient_at` must get it from autograd.

# %%
g = lab.attempt(tl.gradient_at, 1.0, 2.0, 6.0)
if g is not None:
    lab.check("gradient_at(1.0, 2.0, 6.0)", f"{g}")

# %% [markdown]
# ## The loop (task ch00.2)
#
# One step from `w0 = 1` should land on `1 − 0.1 · (−16) = 2.6`, and row 0 should record
# the `w` and the loss *before* that update.

# %%
one = lab.attempt(tl.train_scalar, [2.0], [6.0], 1.0, 0.1, 1)
if one is not None:
    print(f"ws {one.ws}  losses {one.losses}  final w {one.w:.4f}")
    lab.check("w after one step from w0 = 1", f"{one.w:.1f}")

fixed = lab.attempt(tl.train_scalar, XS, YS, 0.0, 0.01, 40)
if fixed is not None:
    rows = [((wk * x - y) ** 2).mean().item() for wk in fixed.ws]
    bad = sum(not math.isclose(a, b, rel_tol=1e-4) for a, b in zip(rows, fixed.losses))
    print(f"your rows that disagree: {bad} of {len(fixed.ws)};  final w {fixed.w:.4f}")

# %% [markdown]
# ## Reading a curve
#
# The same model and data, four learning rates, 40 steps each, trained by *your*
# `train_scalar`.
#
# **Predict before you run the next cell.** After 40 steps at `lr = 0.001`, what fraction
# of the starting loss is left? At `lr = 1.0`, on which step does the loss first print
# `inf`, and on which does it first print `nan`?

# %%
my_guess = {"fraction left at lr=0.001": None, "first inf step": None, "first nan step": None}

# %%
runs = {}
for lr in (0.001, 0.01, 0.1, 1.0):
    run = lab.attempt(tl.train_scalar, XS, YS, 0.0, lr, 40)
    if run is not None:
        runs[lr] = run.losses

if runs:
    slow = runs[0.001]
    lab.check("fraction of the start left after 40 steps at lr=0.001", f"{slow[-1] / slow[0]:.3f}")
    wild = runs[1.0]
    first_inf = next(k for k, v in enumerate(wild) if math.isinf(v))
    first_nan = next(k for k, v in enumerate(wild) if math.isnan(v))
    lab.check("first inf loss at lr=1.0", f"step {first_inf}")
    lab.check("first nan loss at lr=1.0", f"step {first_nan}")

    fig, ax = plt.subplots(figsize=(5, 3))
    for lr, curve in runs.items():
        shown = [v if math.isfinite(v) and v < 1e12 else float("nan") for v in curve]
        ax.plot(shown, marker=".", label=f"lr={lr}")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (log scale)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()

# %% [markdown]
# Where is the edge? The curvature of this loss is `2 · mean(x²)`, and plain gradient
# descent on a quadratic is stable only below `2 / curvature`.

# %%
curvature = 2 * (x**2).mean().item()
lab.check("curvature 2·mean(x²)", f"{curvature:g}")
lab.check("largest stable lr, 2/15", f"{2 / curvature:.2f}")
if runs:
    for lr in (0.13, 0.14):
        edge = tl.train_scalar(XS, YS, 0.0, lr, 40).losses
        print(f"lr = {lr}: loss after 40 steps {edge[-1]:.4g}")

# %% [markdown]
# The `nan` trap: an ordered comparison with `nan` is `False` either way, so a check such
# as `last > 2 * first` lets a `nan` curve through.

# %%
nan = float("nan")
print(f"nan > 375: {nan > 375}   nan < 375: {nan < 375}   nan == nan: {nan == nan}")
print(f"math.isfinite(nan): {math.isfinite(nan)}")

# %% [markdown]
# ## Naming a curve (task ch00.3)

# %%
for lr, curve in runs.items():
    print(f"lr = {lr}: {lab.attempt(tl.classify_curve, curve)}")
print("the broken loop:", lab.attempt(tl.classify_curve, losses))

# %% [markdown]
# ## Drawing a curve (task ch00.4)
#
# Your `plot_losses` must survive the curve you most need to see: the one that ends in
# `nan`.

# %%
png = lab.figure_path("ch00_curve.png")  # labs-out/, at the course's root
curve = runs.get(1.0, [187.5, 36750.0, float("inf"), float("nan")])
saved = lab.attempt(tl.plot_losses, curve, png)
if saved is not None:
    from IPython.display import Image, display

    print(f"wrote {saved}")
    display(Image(filename=str(saved), width=360))

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch00` runs them:

# %%
lab.run_tests("ch00")
