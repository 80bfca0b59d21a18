# %% [markdown]
# # Lab ch05 — waiting or working, and whose random numbers?
#
# The reading (`course/ch05.md`) opens with a shuffling DataLoader whose two workers apply
# the *same* "random" augmentation. This lab runs that program, counts the repeats, then
# times a slow loader with the `time_loader` *you* write in `exercises/ch05/dataloading.py`,
# pads sequences with your `pad_collate`, and repairs the loader with your `seed_worker` and
# `make_loader`. Cells that call your code say `TODO` until you have written that part.
#
# Every loader here uses two workers at most and a few dozen tiny samples, so each cell
# takes a fraction of a second.

# %%
import multiprocessing as mp
import pathlib
import sys
import time
import warnings

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset, get_worker_info  # noqa: E402

from harness import lab  # noqa: E402

dl = lab.module("ch05")  # your module (set COURSE_IMPL=solutions to see the reference)

# Your module is loaded under a private name, which a *spawned* worker could not import, so
# the lab forks its workers where the platform can (as the chapter's tests do).
CTX = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
warnings.filterwarnings("ignore", message="This DataLoader will create")


def forked(loader):
    if CTX is not None and loader.num_workers > 0:
        loader.multiprocessing_context = CTX
    return loader


def noise_rows(loader, epochs=2):
    """Every batch's noise (columns 1:), epoch after epoch, as a list of rounded tuples."""
    rows = []
    for _ in range(epochs):
        for batch in loader:
            rows += [tuple(round(v, 6) for v in r) for r in batch[:, 1:].tolist()]
    return rows


# %% [markdown]
# ## The broken program
#
# `AugmentedDataset(16)` gives sample i as `[i, noise, noise, noise, noise]`, the noise drawn
# from the dataset's own NumPy generator `data.rng`.
#
# **Predict before you run the next cell.** Two workers, four batches of four per epoch,
# two epochs: 32 noise rows in all. How many of them are different? Do batches 0 and 1
# share anything?

# %%
my_guess = {"distinct noise rows of 32": None, "batch 0 noise == batch 1 noise": None}

# %%
torch.manual_seed(0)
data = dl.AugmentedDataset(16)
loader = forked(DataLoader(data, batch_size=4, shuffle=True, num_workers=2))
for epoch in range(2):
    for k, batch in enumerate(loader):
        print(
            f"epoch {epoch} batch {k}: samples {batch[:, 0].int().tolist()}  noise of row 0 "
            f"{[round(v, 3) for v in batch[0, 1:].tolist()]}"
        )
rows = noise_rows(loader)
lab.check(
    "distinct noise rows in the broken program's two epochs", f"{len(set(rows))} of {len(rows)}"
)

# %% [markdown]
# Worker 0 computes batches 0 and 2, worker 1 batches 1 and 3 (the loader deals batches out
# in turn). Each worker was forked with a copy of `data.rng` in the state it had in the main
# process, so both draw the same eight rows, and the next epoch's fresh workers start from
# that same copy again.
#
# The dataset below only reports what each worker knows about itself. PyTorch gives worker
# `w` the seed `base_seed + w` (`get_worker_info().seed`, also what `torch.initial_seed()`
# says in the worker), with `base_seed` drawn anew for every epoch.


# %%
class WhoAmI(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return i, info.id, info.seed - info.id, int(torch.initial_seed() == info.seed)


for epoch in range(2):
    for idx, wid, base, same in forked(DataLoader(WhoAmI(), batch_size=2, num_workers=2)):
        print(
            f"epoch {epoch}: samples {idx.tolist()} from worker {wid[0].item()}, base_seed "
            f"{base[0].item()}, torch.initial_seed() is info.seed: {bool(same[0])}"
        )

# %% [markdown]
# The shuffle order has a problem of its own: with no `generator`, it is drawn from the global
# torch generator, so anything that draws from it first changes it.

# %%
torch.manual_seed(0)
plain = DataLoader(range(8), batch_size=8, shuffle=True)
print("order after manual_seed(0):               ", next(iter(plain)).tolist())
torch.manual_seed(0)
torch.nn.Linear(4, 4)  # building a model draws its initial weights first
print("same seed, but a model was built first:   ", next(iter(plain)).tolist())

# %% [markdown]
# ## Waiting or working? (task ch05.1)
#
# `SleepyDataset(16, 0.01)`: every sample waits 10 ms, like a read from a slow disk. The
# training step (`consume`) waits 5 ms per batch.
#
# **Predict before you run the next cell.** With batches of 2, how many seconds of waiting
# with 0 workers, and with 2 workers (start-up included)?

# %%
my_guess = {"wait with 0 workers (s)": None, "wait with 2 workers (s)": None}


# %%
def step(batch):
    time.sleep(0.005)


sleepy = dl.SleepyDataset(16, 0.01)
timings = {}
for workers in (0, 1, 2):
    loader = forked(DataLoader(sleepy, batch_size=2, num_workers=workers))
    timings[workers] = lab.attempt(dl.time_loader, loader, step, None)
    if timings[workers] is not None:
        t = timings[workers]
        print(
            f"{workers} workers: waited {t.wait_s:.3f} s, worked {t.compute_s:.3f} s, {t.batches} batches"
        )

# %% [markdown]
# With 0 workers the wait is the sixteen sleeps, about 0.16 s. Workers fetch the next batches
# while the step runs; what is left is mostly their start-up (forking, the first tensor
# hand-off). Stopping early must not pull batches nobody uses:

# %%
few = lab.attempt(dl.time_loader, forked(DataLoader(sleepy, batch_size=2, num_workers=2)), step, 3)
if few is not None:
    print(f"max_batches=3: {few.batches} batches consumed")

# %%
import matplotlib.pyplot as plt  # noqa: E402

done = {w: t for w, t in timings.items() if t is not None}
if done:
    fig, ax = plt.subplots(figsize=(4, 2.6))
    ws = list(done)
    ax.bar(range(len(ws)), [done[w].compute_s for w in ws], color="tab:green", label="working")
    ax.bar(
        range(len(ws)),
        [done[w].wait_s for w in ws],
        bottom=[done[w].compute_s for w in ws],
        color="tab:red",
        label="waiting",
    )
    ax.set_xticks(range(len(ws)), [str(w) for w in ws])
    ax.set_xlabel("num_workers")
    ax.set_ylabel("seconds per epoch")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(lab.figure_path("ch05_wait_vs_compute.png"), dpi=80)
    plt.show()

# %% [markdown]
# The clock matters. `time.process_time()` counts the CPU time of this process only, and a
# sleeping loader uses none:

# %%
loader = DataLoader(sleepy, batch_size=2)
wall, cpu = time.perf_counter(), time.process_time()
for _batch in loader:
    pass
print(
    f"one epoch, 0 workers: wall clock {time.perf_counter() - wall:.3f} s, "
    f"process_time {time.process_time() - cpu:.3f} s"
)

# %% [markdown]
# ## Batches of different lengths (task ch05.2)
#
# Three sequences of lengths 3, 1 and 2, two features each; the first holds a real zero row.
# Three sequences and a longest length of three: `B == T`, so a `(T, B, F)` result would look
# right by its shape alone.
#
# **Predict before you run the next cell.** What are `padded.shape` and `lengths`?

# %%
my_guess = {"padded.shape": None, "lengths": None}

# %%
seqs = [
    torch.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, 4.0]]),
    torch.tensor([[5.0, 6.0]]),
    torch.tensor([[7.0, 8.0], [9.0, 1.0]]),
]
collated = lab.attempt(dl.pad_collate, [(s, torch.tensor(label)) for label, s in enumerate(seqs)])
if collated is not None:
    padded, lengths, targets = collated
    print(padded)
    lab.check("pad_collate shape", f"{tuple(padded.shape)}")
    lab.check("pad_collate lengths", f"{lengths.tolist()}")
    lab.check("pad_collate targets", f"{targets.tolist()}")
time_major = torch.nn.utils.rnn.pad_sequence(seqs)  # no batch_first: (T, B, F)
print("pad_sequence without batch_first, row 0:", time_major[0].tolist(), "(position 0 of each)")

# %% [markdown]
# ## Randomness in workers, and the repair (tasks ch05.3 and ch05.4)
#
# Called in the main process, `seed_worker` must do nothing:

# %%
torch.manual_seed(0)
before = torch.rand(1).item()
torch.manual_seed(0)
lab.attempt(dl.seed_worker, 0)
print("main process: torch's next draw unchanged:", torch.rand(1).item() == before)

# %% [markdown]
# **Predict before you run the next cell.** Through your `make_loader(data, 4, 2, seed=0)`,
# how many of the 32 noise rows differ? Does a second loader with the same seed repeat them?

# %%
my_guess = {"distinct rows of 32": None, "same seed, same rows": None}

# %%
first = lab.attempt(lambda: noise_rows(forked(dl.make_loader(dl.AugmentedDataset(16), 4, 2, 0))))
second = lab.attempt(lambda: noise_rows(forked(dl.make_loader(dl.AugmentedDataset(16), 4, 2, 0))))
if first is not None:
    print(
        f"distinct noise rows: {len(set(first))} of {len(first)}; "
        f"same seed repeats them: {first == second}"
    )
    if len(set(first)) == len(first):
        lab.check("distinct noise rows through make_loader", f"{len(set(first))} of {len(first)}")

# %% [markdown]
# With `num_workers=0` there is nothing to reseed: the dataset's generator lives in the main
# process and simply moves on from epoch to epoch.

# %%
rows0 = noise_rows(DataLoader(dl.AugmentedDataset(16), batch_size=4, shuffle=True))
print(f"0 workers: {len(set(rows0))} of {len(rows0)} noise rows distinct")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch05` runs them (they start workers, so
# this cell takes longer than the rest):

# %%
lab.run_tests("ch05")
