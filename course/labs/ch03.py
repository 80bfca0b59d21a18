# %% [markdown]
# # Lab ch03 — a healthy step and a model that cannot learn
#
# The reading (`course/ch03.md`) opens with a two-layer network built from bare tensors
# whose gradients are all fine and which still learns almost nothing on XOR quadrants.
# This lab runs that program, asks for your prediction first, and then runs the pieces
# *you* write in `exercises/ch03/manual_mlp.py`. A cell that calls your code prints
# `TODO` until you have written that part; the notebook still runs to its end.

# %%
import math
import pathlib
import sys
import warnings

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from harness import lab  # noqa: E402

mm = lab.module("ch03")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The data (task ch03.1)
#
# The book's data come from your `make_xor_data(2000, 0)`. Until you have written it, the
# lab uses a stand-in of the same kind (uniform points, same quadrant labels), and its
# numbers will not be the reading's.

# %%
data = lab.attempt(mm.make_xor_data, 2000, 0)
book_data = data is not None
if not book_data:
    g = torch.Generator().manual_seed(0)
    pts = torch.rand(2000, 2, generator=g) * 6 - 3
    labels = (pts[:, 0] * pts[:, 1] < 0).long()
    data = mm.XorData(pts[:1600], labels[:1600], pts[1600:], labels[1600:])
    print("using a stand-in data set")
print("train", tuple(data.X_train.shape), " val", tuple(data.X_val.shape))
print(f"share of class 1 in validation: {data.y_val.float().mean().item():.4f}")

# %% [markdown]
# ## The broken program
#
# Exactly the loop at the top of the reading.
#
# **Predict before you run the next cell.** 16 hidden units, 82 numbers, lr 0.5, 500
# full-batch steps: what validation accuracy at the end? Where does the training loss
# stop?

# %%
my_guess = {"validation accuracy after 500 steps": None, "final training loss": None}


# %%
def books_loop(X, y, relu=False, clear_grads=True, steps=500):
    torch.manual_seed(1)
    W1 = torch.randn(2, 16) / 2**0.5
    b1 = torch.zeros(16)
    W2 = torch.randn(16, 2) / 4
    b2 = torch.zeros(2)
    params = [t.requires_grad_() for t in (W1, b1, W2, b2)]
    losses, first_step = [], None
    for step in range(steps):
        hidden = X @ W1 + b1
        if relu:
            hidden = torch.relu(hidden)
        loss = F.cross_entropy(hidden @ W2 + b2, y)
        if clear_grads:
            for p in params:
                p.grad = None
        loss.backward()
        if step == 0:
            first_step = {n: p.detach().clone() for n, p in zip(("W1", "b1", "W2", "b2"), params)}
        with torch.no_grad():
            for p in params:
                p -= 0.5 * p.grad
        losses.append(loss.item())
    return dict(zip(("W1", "b1", "W2", "b2"), params)), losses, first_step


def linear_forward(params, X):  # the broken network, as a forward function
    return (X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


def relu_forward(params, X):  # the same with the one torch.relu
    return torch.relu(X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


params, losses, before = books_loop(data.X_train, data.y_train)
acc = mm.accuracy(params, data.X_val, data.y_val, linear_forward)
print(f"loss: step 0 {losses[0]:.4f}, step 499 {losses[-1]:.4f};  ln 2 = {math.log(2):.4f}")
print(f"validation accuracy after 500 steps: {acc:.4f}")
relu_params, relu_losses, _ = books_loop(data.X_train, data.y_train, relu=True)
relu_acc = mm.accuracy(relu_params, data.X_val, data.y_val, relu_forward)
print(f"the same loop with one torch.relu: {relu_acc:.4f}")
if book_data:
    lab.check("first loss", f"{losses[0]:.2f}")
    lab.check("final loss", f"{losses[-1]:.4f}")
    lab.check("ln 2", f"{math.log(2):.4f}")
    lab.check("validation accuracy, no nonlinearity", f"{acc:.4f}")
    lab.check("validation accuracy with torch.relu", f"{relu_acc:.3f}")

fig, ax = plt.subplots(figsize=(4.5, 2.8))
ax.plot(losses, label="no nonlinearity")
ax.plot(relu_losses, label="with torch.relu")
ax.axhline(math.log(2), color="0.6", lw=0.8, ls="--")
ax.set_xlabel("step")
ax.set_ylabel("training loss")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The mechanism
#
# Two matrices in a row are one matrix: the broken network is exactly the single linear
# map `X @ (W1 @ W2) + (b1 @ W2 + b2)`.

# %%
with torch.no_grad():
    collapsed = data.X_val @ (params["W1"] @ params["W2"]) + (
        params["b1"] @ params["W2"] + params["b2"]
    )
    gap = (linear_forward(params, data.X_val) - collapsed).abs().max().item()
print(f"largest difference between the network and its one-matrix form: {gap:.1e}")

# %% [markdown]
# ## Parameters as plain tensors (task ch03.2)
#
# First the trap: scaling a tensor *after* asking for its gradient keeps a non-leaf.

# %%
kept = torch.randn(2, 16, requires_grad=True) / 2**0.5
print("is_leaf:", kept.is_leaf, " grad_fn:", type(kept.grad_fn).__name__)
kept.sum().backward()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # PyTorch warns when a non-leaf's .grad is read
    print("its .grad after backward:", kept.grad)  # the raw draw got the gradient

mine = lab.attempt(mm.init_mlp, 2, 16, 2, torch.Generator().manual_seed(1))
if mine is not None:
    print({n: (tuple(t.shape), t.is_leaf, t.requires_grad) for n, t in mine.items()})
    same = torch.equal(mine["W1"].detach(), before["W1"]) and torch.equal(
        mine["W2"].detach(), before["W2"]
    )
    print("the book's starting weights:", same)

# %% [markdown]
# ## The forward pass (task ch03.3)
#
# Your `mlp_forward` on points shifted along a line: an affine map gives a second
# difference of zero; a network with a ReLU does not.

# %%
if mine is not None:
    with torch.no_grad():
        a, b = torch.tensor([[1.0, -1.0]]), torch.tensor([[-2.0, 0.5]])
        outs = [mm.mlp_forward(mine, a + t * b) for t in (0.0, 1.0, 2.0)]
        print(f"second difference: {(outs[2] - 2 * outs[1] + outs[0]).abs().max().item():.4f}")

# %% [markdown]
# ## Cross-entropy by hand (task ch03.4)
#
# The literal formula against logits of ±1000:

# %%
z = torch.tensor([[1000.0, -1000.0], [-1000.0, 1000.0]])
t = torch.tensor([0, 0])
print(
    "exp(1000) =",
    torch.exp(torch.tensor(1000.0)).item(),
    " inf / inf =",
    (torch.exp(z) / torch.exp(z).sum()).max().item(),
)
literal = -torch.log(torch.exp(z[range(2), t]) / torch.exp(z).sum(1))
print("literal per-example losses:", literal.tolist())
print("F.cross_entropy:", F.cross_entropy(z, t).item())
ce = lab.attempt(mm.cross_entropy, z, t)
if ce is not None:
    print("yours:", ce.item())

# %% [markdown]
# ## One update (task ch03.5)
#
# The two look-alikes from the reading:

# %%
w = torch.zeros(3, requires_grad=True)
(2 * w).sum().backward()
replaced = w - 0.1 * w.grad
print("p - lr * p.grad: is_leaf", replaced.is_leaf, type(replaced.grad_fn).__name__)
try:
    w -= 0.1 * w.grad
except RuntimeError as exc:
    print("in place outside no_grad:", exc)


def one_sgd_step():
    mm.sgd_step({"w": w}, 0.1)
    return True


if lab.attempt(one_sgd_step):
    print("your step moved w to", w.detach().tolist(), "and left .grad at", w.grad.tolist())

# %% [markdown]
# ## Is one step healthy? (task ch03.6)
#
# Your report on the very first step of the broken program.

# %%
first = {n: p.detach().clone().requires_grad_() for n, p in before.items()}
loss0 = F.cross_entropy(linear_forward(first, data.X_train), data.y_train)
loss0.backward()
snapshot = {n: p.detach().clone() for n, p in first.items()}
with torch.no_grad():
    for p in first.values():
        p -= 0.5 * p.grad
rows = lab.attempt(mm.step_report, snapshot, first)
for row in rows or []:
    print(
        f"{row.name}: leaf {row.is_leaf}  grad norm {row.grad_norm:.4f}  moved {row.moved:.4f}  finite {row.finite}"
    )
    if book_data:
        lab.check(
            f"{row.name} grad norm and move",
            f"| {row.name} | {row.grad_norm:.4f} | {row.moved:.4f} |",
        )

# %% [markdown]
# ## Training (task ch03.7)
#
# **Predict before you run the next cell.** A loop that never clears `.grad` matches the
# book for two steps. Does it end at 0.995 too?

# %%
my_guess = {"final accuracy without clearing .grad": None}

# %%
history = lab.attempt(mm.train_mlp, data)
linear_history = lab.attempt(mm.train_mlp, data, forward=linear_forward)
if history is not None and linear_history is not None:
    print(
        f"your train_mlp: {history.val_acc[-1]:.4f} with mlp_forward, {linear_history.val_acc[-1]:.4f} without a nonlinearity"
    )


def never_clears(steps=500):
    p = mm.init_mlp(2, 16, 2, torch.Generator().manual_seed(1))
    for _ in range(steps):
        mm.cross_entropy(mm.mlp_forward(p, data.X_train), data.y_train).backward()
        mm.sgd_step(p, 0.5)
    return mm.accuracy(p, data.X_val, data.y_val)


stale = lab.attempt(never_clears)
stale_params, _, _ = books_loop(data.X_train, data.y_train, relu=True, clear_grads=False)
stale_f = mm.accuracy(stale_params, data.X_val, data.y_val, relu_forward)
print(f"never clearing, with F.cross_entropy: {stale_f:.4f}")
if stale is not None:
    print(f"never clearing, with your pieces:     {stale:.4f}")
    if book_data:
        # 500 steps on summed gradients amplify rounding: the exact accuracy moves with the
        # machine (0.9925 on one, 0.9975 on another), its distance from 0.995 does not
        for label, acc in (("reference pieces", stale), ("F.cross_entropy", stale_f)):
            near = abs(acc - 0.995) <= 0.01
            lab.check(
                f"never clearing .grad, {label}", "within 0.01 of 0.995" if near else f"{acc:.4f}"
            )

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch03` runs them:

# %%
lab.run_tests("ch03")
