# %% [markdown]
# # Lab ch02 — where does the gradient stop?
#
# The reading (`course/ch02.md`) describes a two-stage model that fits its data while one
# of its two weights never learns. This lab runs that program, lets you make the
# prediction before you see the numbers, and then points the diagnostics *you* write in
# `exercises/ch02/autograd.py` at it. Cells that call your code say `TODO` until you
# have written that part; nothing here stops the notebook.

# %%
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import torch  # noqa: E402

from harness import lab  # noqa: E402

ag = lab.module("ch02")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# The first stage keeps a copy of its output for later inspection — and, to be careful,
# detaches it. `run_two_stage` (complete in your module) trains `w2 * stage(w1, x)` with
# plain SGD, skipping every parameter whose `.grad` is `None`.


# %%
def books_first_stage(w1, x, log):
    features = (w1 * x).detach()  # "safe" for the log
    log.append(features)
    return features


# %% [markdown]
# **Predict before you run the next cell.** After 400 steps at learning rate 0.02, which
# weights moved? What is the loss, and what is `w2`? Write your guess here:

# %%
my_guess = {"w1 moves": None, "w2 after 400 steps": None, "final loss": None}

# %%
book = ag.run_two_stage(books_first_stage, 400, 0.02)
for step in (0, 9, 99):
    print(
        f"step {step:>3}: loss {book.losses[step]:.6f}  w2 {book.w2s[step + 1]:.4f}  w1 {book.w1s[step + 1]:.4f}"
    )
lab.check("loss at step 0", f"{book.losses[0]:.6f}")
lab.check("loss at step 9", f"{book.losses[9]:.6f}")
lab.check("w2 after step 9", f"{book.w2s[10]:.4f}")
lab.check("w2 after 400 steps", f"{book.w2s[400]:.4f}")
lab.check("w1 throughout", f"{book.w1s[-1]:.4f}")

# %% [markdown]
# The loss reaches zero and the run "works" — but compare `w1` with your guess. The
# `if p.grad is not None` guard silently skipped it on every step.
#
# ## Which parameters can the loss reach? (task ch02.1)

# %%
w1 = torch.tensor(0.5, requires_grad=True)
w2 = torch.tensor(1.0, requires_grad=True)
x = torch.tensor([1.0, 2.0, 3.0, 4.0])
loss = ((w2 * books_first_stage(w1, x, []) - 3 * x) ** 2).mean()
print("reachable:", lab.attempt(ag.reachable_params, loss, [("w1", w1), ("w2", w2)]))

# %% [markdown]
# ## Where does the path stop? (task ch02.2)
#
# `find_graph_cuts` runs a function and reports each operation whose input required grad
# while its output does not — the first place the path stops existing.


# %%
def one_step(w1, w2):
    return ((w2 * books_first_stage(w1, x, []) - 3 * x) ** 2).mean()


cuts = lab.attempt(ag.find_graph_cuts, one_step, w1, w2)
for cut in cuts or []:
    print(f"cut: {cut.op} at {cut.location}")

# %% [markdown]
# ## The repair (task ch02.3)
#
# Keep a detached *copy* for the log, and return the connected tensor. With your repair
# in `first_stage`, both weights move and their product approaches 3.

# %%
fixed = lab.attempt(ag.two_stage_train, 400, 0.02)
if fixed is not None:
    print(f"w1 {fixed.w1:.4f}  w2 {fixed.w2:.4f}  w1*w2 {fixed.w1 * fixed.w2:.4f}")
    if fixed.w1 != 0.5:
        lab.check("repaired w1", f"{fixed.w1:.4f}")
        lab.check("repaired w2", f"{fixed.w2:.4f}")

# %% [markdown]
# ## Gradient accumulation (task ch02.4)
#
# Four micro-batches must give the full batch's gradient: zero once, scale each loss.

# %%
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
batch = (torch.randn(8, 3), torch.randn(8, 1))
grads = lab.attempt(ag.accumulated_grad, model, torch.nn.functional.mse_loss, batch, 4)
if grads is not None:
    model.zero_grad()
    torch.nn.functional.mse_loss(model(batch[0]), batch[1]).backward()
    full = {n: p.grad for n, p in model.named_parameters()}
    for name, g in grads.items():
        print(
            f"{name}: largest difference from the full batch {(g - full[name]).abs().max().item():.2e}"
        )

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch02` runs them:

# %%
lab.run_tests("ch02")
