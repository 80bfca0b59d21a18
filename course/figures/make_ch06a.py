"""Draw the ch06a figure from the reference solution: distances concentrate as the
dimension grows.

python course/figures/make_ch06a.py  ->  course/figures/ch06a_distance_concentration.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

fs = load_solution("ch06a", "feature_space")

DIMS = [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9.5, 3.6))
for seed in range(5):
    contrast = fs.distance_concentration(DIMS, 100, torch.Generator().manual_seed(seed))
    ax1.plot(
        DIMS, contrast, marker=".", color="C0", alpha=0.6, label="5 seeds" if seed == 0 else None
    )
ax1.set_xscale("log")
ax1.set_yscale("log")
ax1.set_xlabel("dimension d")
ax1.set_ylabel("(max - min) / min of pair distances")
ax1.set_title("relative contrast, 100 uniform points")
ax1.legend(fontsize=8)

gen = torch.Generator().manual_seed(0)
for d, color in [(2, "C1"), (20, "C2"), (1000, "C3")]:
    dist = torch.pdist(torch.rand(100, d, generator=gen, dtype=torch.float64))
    ax2.hist(
        (dist / dist.mean()).numpy(),
        bins=60,
        range=(0, 2.2),
        histtype="step",
        color=color,
        density=True,
        label=f"d = {d}",
    )
ax2.set_xlabel("pair distance / mean pair distance")
ax2.set_ylabel("density")
ax2.set_title("nearest and farthest pairs merge")
ax2.legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "ch06a_distance_concentration.png", dpi=100)
print(HERE / "ch06a_distance_concentration.png")
