"""Draw the ch00 learning curves (one per learning rate) from the reference solution.

python course/figures/make_ch00.py   ->  course/figures/ch00_learning_rates.png
"""

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

tl = load_solution("ch00", "training_loop")

XS, YS = [1.0, 2.0, 3.0, 4.0], [5.0, 10.0, 15.0, 20.0]
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for lr in (0.001, 0.01, 0.1, 1.0):
    losses = tl.train_scalar(XS, YS, w0=0.0, lr=lr, steps=40).losses
    shown = [v if math.isfinite(v) and v < 1e12 else float("nan") for v in losses]
    ax.plot(shown, marker=".", label=f"lr={lr}: {tl.classify_curve(losses)}")
ax.set_yscale("log")
ax.set_ylim(1e-12, 1e12)
ax.set_xlabel("step")
ax.set_ylabel("MSE loss (log scale)")
ax.set_title("y = 5x, w0 = 0: one model, four learning rates")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "ch00_learning_rates.png", dpi=110)
print(HERE / "ch00_learning_rates.png")
