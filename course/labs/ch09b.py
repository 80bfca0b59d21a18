# %% [markdown]
# # Lab ch09b — can this run be repeated, and how noisy is it?
#
# The reading (`course/ch09b.md`) opens with a tidied-up training script whose seed moved
# below the model and whose shuffle got an unseeded generator. This lab runs that script,
# lets you predict before each reveal, and then points the instruments *you* write in
# `exercises/ch09b/regressions.py` at it: a fingerprint, the repaired run, a comparison
# of two runs, and a regression call made against seed-to-seed noise. Cells that call your
# code say `TODO` until you have written that part; nothing here stops.

# %%
import pathlib
import statistics
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from harness import lab  # noqa: E402

rg = lab.module("ch09b")  # your module (set COURSE_IMPL=solutions to see the reference)
config = rg.RunConfig()
start_seed = torch.initial_seed()  # before anything here seeds the global generator

# %% [markdown]
# ## The broken program
#
# The refactored run, written out here so that it needs none of your code: it returns the
# losses, a copy of the initial weights, and the order of every epoch.


# %%
def books_run(config, seed):
    X, y = rg.make_data(config)
    model = rg.build_model(config)  # weights drawn from whatever the global state is
    init = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(seed)  # moved here by the refactor
    order_gen = torch.Generator()  # local, and never seeded
    opt = torch.optim.SGD(model.parameters(), lr=config.lr)
    losses, orders = [], []
    for _ in range(config.epochs):
        order = torch.randperm(config.n, generator=order_gen)
        orders.append(order)
        for start in range(0, config.n, config.batch_size):
            idx = order[start : start + config.batch_size]
            loss = ((model(X[idx]) - y[idx]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, init, orders


def last_epoch(losses):
    return statistics.fmean(losses[-8:])  # 8 steps an epoch


# %% [markdown]
# **Predict before you run the next cell.** Two calls with seed 3 in one process: same
# losses? Five seeds 0..4: how many different data orders?

# %%
my_guess = {"same losses twice": None, "distinct orders among 5 seeds": None}

# %%
first, second = books_run(config, 3), books_run(config, 3)
same_init = all(torch.equal(first[1][k], second[1][k]) for k in first[1])
print(f"seed 3, first call:  last-epoch loss {last_epoch(first[0]):.4f}")
print(f"seed 3, second call: last-epoch loss {last_epoch(second[0]):.4f}")
print("same initial weights:", same_init)
lab.check("the second call's last-epoch loss", f"{last_epoch(second[0]):.4f}")
orders = [books_run(config, s)[2] for s in range(5)]
distinct = []
for o in orders:
    if not any(all(torch.equal(a, b) for a, b in zip(o, d)) for d in distinct):
        distinct.append(o)
print("distinct data orders among seeds 0..4:", len(distinct))

# %% [markdown]
# Where the two bugs come from: the global generator's state before the first call is
# whatever this process left there (on torch 2.13 each process starts it at random), and
# a fresh `torch.Generator()` always starts from the same default seed.

# %%
print("this process's global seed, before any manual_seed:", start_seed)
print("after the runs above (seeds 0..4 last):", torch.initial_seed())
print("two fresh generators:", torch.Generator().initial_seed(), torch.Generator().initial_seed())

# %% [markdown]
# ## Fingerprints (task ch09b.1)
#
# **Predict before you run the next cell.** Which pairs must share a digest: a transposed
# view and its contiguous copy? A `Parameter` and its detached copy? `zeros(4)` as
# `int32` and as `float32` (the same 16 bytes)?

# %%
my_guess = {"view vs copy": None, "Parameter vs copy": None, "int32 vs float32 zeros": None}

# %%
t = torch.arange(6.0).reshape(2, 3)
w = torch.nn.Parameter(torch.randn(3, 3))
pairs = {
    "view vs copy": (t.t(), t.t().contiguous()),
    "Parameter vs copy": (w, w.detach().clone()),
    "int32 vs float32 zeros": (torch.zeros(4, dtype=torch.int32), torch.zeros(4)),
    "a swapped pair of values": (torch.tensor([1.0, 2.0]), torch.tensor([2.0, 1.0])),
    "bfloat16 one vs two": (torch.ones(2, dtype=torch.bfloat16), torch.full((2,), 2.0).bfloat16()),
}
for name, (a, b) in pairs.items():
    fa = lab.attempt(rg.fingerprint, a)
    if fa is None:
        break
    print(f"{name:<26} same digest: {fa == rg.fingerprint(b)}")
print(
    "same 16 bytes:",
    pairs["int32 vs float32 zeros"][0].numpy().tobytes() == torch.zeros(4).numpy().tobytes(),
)
try:
    torch.ones(2, dtype=torch.bfloat16).numpy()
except TypeError as exc:
    print(
        "bfloat16 has no numpy twin:",
        exc,
        "- but as bytes:",
        torch.ones(2, dtype=torch.bfloat16).view(torch.uint8).tolist(),
    )

# %%
digests = [lab.attempt(rg.fingerprint, run[1]) for run in (first, second)]
if digests[1] is not None:
    print("init fingerprints of the two calls:", [d[:8] for d in digests])
    lab.check("the second call's init fingerprint", f"{digests[1][:8]}")

# %% [markdown]
# ## The repair (task ch09b.2)
#
# Your `make_run` is still the refactored one (and it uses your `fingerprint`). Seed before
# the model is built, and shuffle from a generator seeded from the seed.
#
# **Predict before you run the next cell.** With the repair, two calls with seed 3 after
# drawing some unrelated random numbers: bitwise the same? How many orders among 5 seeds?

# %%
my_guess = {"bitwise the same": None, "distinct orders among 5 seeds": None}

# %%
a = lab.attempt(rg.make_run, config, 3)
torch.randn(1000)  # unrelated random numbers, drawn between the calls
b = lab.attempt(rg.make_run, config, 3)
if a is not None and b is not None:
    print("bitwise the same:", a == b)
    orders = {rg.make_run(config, s).order_fingerprint for s in range(5)}
    print("distinct orders among seeds 0..4:", len(orders))

# %% [markdown]
# ## Comparing two runs (task ch09b.3)
#
# **Predict before you run the next cell.** The same seed under `lr=0.05` and `lr=0.03`:
# comparable? At which step do the losses part? And two different seeds?

# %%
my_guess = {"lr change comparable": None, "first differing step": None, "seeds 0 vs 1": None}

# %%
runs = [lab.attempt(rg.make_run, config._replace(lr=lr), 0) for lr in (0.05, 0.03)]
if None not in runs:
    comparison = lab.attempt(rg.compare_runs, *runs)
    if comparison is not None:
        print(comparison)
        la, lb = runs[0].losses, runs[1].losses
        k = next(i for i, (x, y) in enumerate(zip(la, lb)) if x != y)
        lab.check("where lr 0.05 and 0.03 part", f"step {k} ({la[k]:.4f}… vs {lb[k]:.4f}…)")
        print(lab.attempt(rg.compare_runs, rg.make_run(config, 0), rg.make_run(config, 1)))
nan = float("nan")
twin = rg.RunResult([0.5, nan], "i", "o")
comparison = lab.attempt(rg.compare_runs, twin, rg.RunResult([0.5, nan], "i", "o"))
if comparison is not None:
    print("both nan at step 1:", comparison, " (and nan != nan is", nan != nan, ")")

# %% [markdown]
# ## Is it a regression? (task ch09b.4)
#
# The metric is the last epoch's mean loss. 32 baseline seeds, the same configuration
# rerun with 8 other seeds, and a candidate with `lr=0.03` on 8 seeds.

# %%
probe = lab.attempt(rg.make_run, config, 0)
base = rerun = cand = None
if probe is not None:
    base = {s: last_epoch(rg.make_run(config, s).losses) for s in range(32)}
    rerun = {s: last_epoch(rg.make_run(config, s).losses) for s in range(100, 108)}
    low_lr = config._replace(lr=0.03)
    cand = {s: last_epoch(rg.make_run(low_lr, s).losses) for s in range(100, 108)}
    spread = f"{min(base.values()):.3f} to {max(base.values()):.3f}"
    mean_sd = (
        f"mean {statistics.fmean(base.values()):.3f}, sd {statistics.stdev(base.values()):.3f}"
    )
    print("baseline:", spread, mean_sd)
    lab.check("baseline spread", spread)
    lab.check("baseline mean and sd", mean_sd)
    lab.check("the rerun's worst run", f"{max(rerun.values()):.2f}")
    lab.check("candidate mean", f"{statistics.fmean(cand.values()):.3f}")
    lab.check("the candidate's best run", f"{min(cand.values()):.3f}")

# %%
if base is not None:
    fig, ax = plt.subplots(figsize=(5.5, 2.6))
    for row, values in enumerate((base, rerun, cand)):
        ax.scatter(list(values.values()), [row] * len(values), alpha=0.6, s=18)
    ax.set_yticks([0, 1, 2], ["baseline", "rerun", "lr=0.03"])
    ax.set_xlabel("last-epoch loss (lower is better)")
    fig.tight_layout()
    plt.show()

# %% [markdown]
# **Predict before you run the next cell.** Is the unchanged rerun a regression? The
# candidate? And a shift of 0.3 when runs vary by 0.01, then by 1?

# %%
my_guess = {"rerun": None, "candidate": None, "0.3 vs noise 0.01": None, "0.3 vs noise 1": None}

# %%
if base is not None:
    print("rerun is a regression:", lab.attempt(rg.is_regression, base, rerun))
    print("candidate is a regression:", lab.attempt(rg.is_regression, base, cand))
noise = [-1.5, -0.5, 0.0, 0.5, 1.5, -1.0, 1.0, 0.0]
for scale in (0.01, 1.0):
    quiet = {s: 1.0 + scale * e for s, e in enumerate(noise)}
    shifted = {s: 1.3 + scale * e for s, e in enumerate(noise)}
    verdict = lab.attempt(rg.is_regression, quiet, shifted)
    if verdict is None:
        break
    print(f"shift 0.3, noise {scale}: regression {verdict}")
try:
    rg.is_regression({0: 1.0}, {0: 2.0})
    print("one run a side was accepted")
except NotImplementedError:
    pass
except ValueError as exc:
    print("one run a side: ValueError:", exc)

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch09b` runs them:

# %%
lab.run_tests("ch09b")
