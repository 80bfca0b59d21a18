# %% [markdown]
# # Lab ch08 — a model that refuses to learn
#
# The reading (`course/ch08.md`) opens with a transfer setup whose loss prints the same
# number for 200 steps. This lab runs it, lets you predict before each reveal, and then
# points the code *you* write in `exercises/ch08/debugging.py` at it: the repair, the
# diagnostic that names why a run is stuck, and the one-batch overfitting check. Cells
# that call your code say `TODO` until you have written that part; nothing here stops.

# %%
import copy
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

dbg = lab.module("ch08")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# Freeze the "pretrained" features, build the optimizer, then give the model a fresh head
# for the new task. `make_task` and `train_steps` are complete in your module.


# %%
def books_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)  # new task's head
    return model, optimizer


batch = dbg.make_task(256, seed=1)

# %% [markdown]
# **Predict before you run the next cell.** The head is new and trainable. After 200
# steps of SGD at lr 0.1, what is the loss at step 0, and at step 199?

# %%
my_guess = {"loss at step 0": None, "loss at step 199": None}

# %%
torch.manual_seed(0)
model, optimizer = books_setup(dbg.TransferNet())
flat = dbg.train_steps(model, optimizer, F.cross_entropy, batch, 200)
for step in (0, 1, 99, 199):
    print(f"step {step:>3}: loss {flat[step]:.6f}")
print("bit for bit the same at step 0 and step 199:", flat[0] == flat[199])
lab.check("book's loss at step 0", f"{flat[0]:.6f}")
lab.check("book's loss at step 199", f"{flat[199]:.6f}")

# %% [markdown]
# ## What each piece holds
#
# **Predict before you run the next cell.** How many tensors does the optimizer hold, and
# how many of them are parameters of the model as it is now? Which tensors have a `.grad`
# after one backward?

# %%
my_guess = {"tensors held": None, "of which in the model": None, "have a .grad": None}

# %%
held = [p for group in optimizer.param_groups for p in group["params"]]
in_model = {id(p) for p in model.parameters()}
print("the optimizer holds", len(held), "tensors:", [tuple(p.shape) for p in held])
print("of which parameters of the model now:", sum(id(p) in in_model for p in held))
print(
    "the new head's shapes are the old head's:", [tuple(p.shape) for p in model.head.parameters()]
)
print(".grad of what the optimizer holds:", [p.grad for p in held])
print(".grad of the new head is set:", all(p.grad is not None for p in model.head.parameters()))

# %% [markdown]
# The optimizer walked `model.parameters()` once, when it was built, and kept the old
# head. Backward fills the new head's `.grad`, which nobody steps; the tensors the
# optimizer holds have no `.grad` at all, and `step()` skips them.
#
# ## The repair (task ch08.1)
#
# In your module, `build_transfer_setup` still builds the optimizer before the head swap.
# Reorder it and hand SGD exactly the parameters that should train.

# %%
torch.manual_seed(0)
setup = lab.attempt(dbg.build_transfer_setup, dbg.TransferNet())
repaired = None
if setup is not None:
    new_model, new_optimizer = setup
    repaired = dbg.train_steps(new_model, new_optimizer, F.cross_entropy, batch, 200)
    print(f"repaired: step 0 {repaired[0]:.6f}, step 199 {repaired[199]:.6f}")
    if repaired[199] != repaired[0]:
        lab.check("repaired loss at step 0", f"{repaired[0]:.6f}")
        lab.check("repaired loss at step 199", f"{repaired[199]:.6f}")
    else:
        print("still flat: the optimizer does not hold the new head yet")

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(flat, "k--", label="optimizer built before the head swap")
if repaired is not None:
    ax.plot(repaired, "k-", label="your build_transfer_setup")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Diagnose (task ch08.2)
#
# `diagnose` compares the model's parameters with what the optimizer holds, by identity,
# then runs a few steps on a deep copy and watches gradients, values, losses and outputs.
#
# **Predict before you run the next cell.** Which codes does the book's setup earn? (Four
# tensors held, two of them frozen features, two of them the old head.)

# %%
my_guess = {"codes for the book's setup": None}

# %%
torch.manual_seed(0)
model, optimizer = books_setup(dbg.TransferNet())
findings = lab.attempt(dbg.diagnose, model, optimizer, F.cross_entropy, batch, 20)
for f in findings or []:
    print(f"{f.code:<24} {f.where:<18} {f.detail}")


# %% [markdown]
# The same diagnostic on other ways a run gets stuck. A healthy setup should give `[]`.


# %%
def small_mlp(*tail):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4), *tail)


def with_sgd(model, lr=0.1):
    return model, torch.optim.SGD(model.parameters(), lr=lr)


cases = {
    "healthy": (*with_sgd(small_mlp()), batch),
    "lr 0": (*with_sgd(small_mlp(), lr=0.0), batch),
    "softmax before cross_entropy": (*with_sgd(small_mlp(nn.Softmax(dim=1))), batch),
    "shuffled labels": (*with_sgd(small_mlp()), dbg.make_task(1024, 1, shuffle_labels=True)),
}
for name, (model, optimizer, data) in cases.items():
    before = copy.deepcopy(model.state_dict())
    found = lab.attempt(dbg.diagnose, model, optimizer, F.cross_entropy, data, 30)
    if found is None:
        break
    print(f"{name:<30} {sorted({f.code for f in found})}")
    untouched = all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    print(f"{'':<30} caller's model untouched: {untouched}")

# %% [markdown]
# Why `diagnose` checks finiteness on its own: `nan` compares `False` with everything,
# so a `nan` loss slips through any `<`, `>` or `==` test, and even `max` answers by
# the order of its arguments.

# %%
nan = float("nan")
print("nan == nan:", nan == nan, " nan < 1:", nan < 1, " nan > 1:", nan > 1)
print("max(nan, 1.0):", max(nan, 1.0), " max(1.0, nan):", max(1.0, nan))
torch.manual_seed(0)
rows = torch.randn(10_000, 4).softmax(dim=1).sum(dim=1)
print(f"softmax rows summing to exactly 1 in float32: {(rows == 1).float().mean():.0%}")
print(f"largest distance from 1: {(rows - 1).abs().max():.1e}")

# %% [markdown]
# ## Overfit one batch (task ch08.3)
#
# **Predict before you run the next cell.** A small MLP, 8 examples, *random* labels
# among 4 classes, 100 steps of full-batch Adam. Does it get every label right?

# %%
my_guess = {"final loss": None, "all 8 right": None}

# %%
torch.manual_seed(0)
net = small_mlp()
x8, y8 = torch.randn(8, 8), torch.randint(0, 4, (8,))
losses = lab.attempt(dbg.overfit_one_batch, net, (x8, y8), 100)
if losses is not None:
    with torch.no_grad():
        right = (net(x8).argmax(dim=1) == y8).sum().item()
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; {right} of 8 labels right")

# %% [markdown]
# Memorizing random labels is easy on 8 examples and out of reach on 1024, which is why
# `at_chance` is a question for large batches only.
#
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch08` runs them:

# %%
lab.run_tests("ch08")
