"""Draw the ch09b figure from the reference solution: the seed-to-seed spread of one
metric, and where single candidate runs and a candidate's spread fall in it.

python course/figures/make_ch09b.py  ->  course/figures/ch09b_seed_spread.png (a few seconds)
"""

import statistics
from pathlib import Path

import matplotlib
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

rg = load_solution("ch09b", "regressions")
torch.set_num_threads(1)


def metric(config, seed):
    """Mean training loss over the last epoch (8 steps) of one run."""
    return statistics.fmean(rg.make_run(config, seed).losses[-8:])


base_cfg, cand_cfg = rg.RunConfig(), rg.RunConfig(lr=0.03)
base = {s: metric(base_cfg, s) for s in range(32)}
cand = {s: metric(cand_cfg, s) for s in range(100, 108)}
rerun = {s: metric(base_cfg, s) for s in range(100, 108)}
mu, sd = statistics.fmean(base.values()), statistics.stdev(base.values())

fig, ax = plt.subplots(figsize=(7.5, 3.6))
rows = [
    ("baseline lr=0.05\n32 seeds", list(base.values()), "C0"),
    ("rerun lr=0.05\n8 other seeds", list(rerun.values()), "C2"),
    ("candidate lr=0.03\n8 seeds", list(cand.values()), "C3"),
]
for y, (_label, values, color) in enumerate(rows):
    jitter = [y + 0.12 * ((i * 7) % 5 - 2) / 2 for i in range(len(values))]
    ax.scatter(values, jitter, color=color, alpha=0.75, s=22)
    ax.plot([statistics.fmean(values)] * 2, [y - 0.3, y + 0.3], color=color, lw=2)
ax.axvspan(mu - 2 * sd, mu + 2 * sd, color="C0", alpha=0.12, label="baseline mean +- 2 sd")
best = min(cand, key=cand.get)
ax.annotate(
    f"candidate seed {best}: {cand[best]:.3f}\ninside the baseline spread",
    xy=(cand[best], 2),
    xytext=(cand[best] + 0.04, 1.35),
    arrowprops=dict(arrowstyle="->"),
    fontsize=8,
)
ax.set_yticks(range(len(rows)), [r[0] for r in rows], fontsize=8)
ax.set_ylim(-0.6, 2.6)
ax.set_xlabel("last-epoch training loss (lower is better)")
verdicts = (
    f"is_regression(baseline, rerun) = {rg.is_regression(base, rerun)}; "
    f"is_regression(baseline, candidate) = {rg.is_regression(base, cand)}"
)
ax.set_title(verdicts, fontsize=8)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig(HERE / "ch09b_seed_spread.png", dpi=100)
print(
    f"baseline mean {mu:.4f} sd {sd:.4f} min {min(base.values()):.4f} max {max(base.values()):.4f}"
)
print(
    f"rerun mean {statistics.fmean(rerun.values()):.4f}; candidate mean {statistics.fmean(cand.values()):.4f}"
)
print("candidate runs", {s: round(v, 4) for s, v in cand.items()})
print(verdicts)
