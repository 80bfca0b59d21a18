"""Draw where an epoch's time goes (waiting for batches vs the training step) for several
worker counts, on sleep-bound and on CPU-bound samples, from the reference solution.

python course/figures/make_ch05.py   ->  course/figures/ch05_wait_vs_compute.png
"""

import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

dl = load_solution("ch05", "dataloading")
warnings.filterwarnings("ignore", message="This DataLoader will create")

WORKERS = [0, 1, 2, 4, 8]


def step(batch):
    """A stand-in training step: 10 ms of waiting on an accelerator."""
    time.sleep(0.01)


def measure(dataset):
    """(first epoch, second epoch) per worker count; workers persist between the two epochs
    here (a figure, not a test), so the second epoch shows the steady state."""
    rows = []
    for w in WORKERS:
        loader = DataLoader(dataset, batch_size=4, num_workers=w, persistent_workers=w > 0)
        first = dl.time_loader(loader, step, None)
        rows.append((first, dl.time_loader(loader, step, None)))
        del loader  # shuts the persistent workers down
    return rows


panels = [
    ("sleep-bound samples (32 x 10 ms of I/O)", measure(dl.SleepyDataset(32, 0.01))),
    ("CPU-bound samples (32 x a few ms of Python work)", measure(dl.BusyDataset(32, work=50_000))),
]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
for ax, (title, rows) in zip(axes, panels):
    x = range(len(WORKERS))
    compute = [second.compute_s for _, second in rows]
    wait = [second.wait_s for _, second in rows]
    startup = [max(0.0, first.wait_s - second.wait_s) for first, second in rows]
    ax.bar(x, compute, color="tab:green", label="training step (consume)")
    ax.bar(x, wait, bottom=compute, color="tab:red", label="waiting for the next batch")
    top = [c + w for c, w in zip(compute, wait)]
    ax.bar(
        x,
        startup,
        bottom=top,
        color="none",
        edgecolor="gray",
        hatch="//",
        label="extra wait in the first epoch (worker start-up)",
    )
    ax.set_xticks(list(x), [str(w) for w in WORKERS])
    ax.set_xlabel("num_workers")
    ax.set_title(title, fontsize=9)
axes[0].set_ylabel("seconds per epoch of 8 batches")
axes[0].legend(fontsize=8)
fig.suptitle(
    "Where an epoch goes (time_loader, 2 CPU cores): steady state, plus start-up", fontsize=10
)
fig.tight_layout()
fig.savefig(HERE / "ch05_wait_vs_compute.png", dpi=100)
for title, rows in panels:
    print(title, [(w, round(a.wait_s, 3), round(b.wait_s, 3)) for w, (a, b) in zip(WORKERS, rows)])
print(HERE / "ch05_wait_vs_compute.png")
