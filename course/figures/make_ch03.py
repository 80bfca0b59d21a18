"""Draw the ch03 figure from the reference solution: validation accuracy with and without
the nonlinearity, and what each trained network predicts over the plane.

python course/figures/make_ch03.py   ->  course/figures/ch03_nonlinearity.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

mm = load_solution("ch03", "manual_mlp")


def linear(params, X):
    return (X @ params["W1"] + params["b1"]) @ params["W2"] + params["b2"]


data = mm.make_xor_data(2000, 0)
runs = {
    "ReLU hidden layer": (mm.train_mlp(data), mm.mlp_forward),
    "no nonlinearity": (mm.train_mlp(data, forward=linear), linear),
}

fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
for label, (hist, _) in runs.items():
    axes[0].plot(hist.val_acc, label=f"{label}: {hist.val_acc[-1]:.4f}")
axes[0].set_xlabel("step (full batch, lr 0.5)")
axes[0].set_ylabel("validation accuracy")
axes[0].set_ylim(0.4, 1.02)
axes[0].legend(fontsize=8, loc="lower right")
axes[0].set_title("same loop, same data, same seed")

grid = torch.linspace(-3, 3, 200)
gx, gy = torch.meshgrid(grid, grid, indexing="xy")
points = torch.stack([gx.reshape(-1), gy.reshape(-1)], dim=1)  # (200*200, 2)
for ax, (label, (hist, forward)) in zip(axes[1:], runs.items()):
    with torch.no_grad():
        pred = forward(hist.params, points).argmax(1).reshape(200, 200)
    ax.contourf(gx, gy, pred, levels=[-0.5, 0.5, 1.5], colors=["#dde6f5", "#f7ddd5"])
    Xv, yv = data.X_val, data.y_val
    ax.scatter(Xv[yv == 0, 0], Xv[yv == 0, 1], s=5, c="#2b5fb4", label="class 0")
    ax.scatter(Xv[yv == 1, 0], Xv[yv == 1, 1], s=5, c="#c0462a", label="class 1")
    ax.set_xlim(-3, 3)
    ax.set_ylim(-3, 3)
    ax.set_aspect("equal")
    ax.set_title(f"{label}: predicted class", fontsize=10)
axes[1].legend(fontsize=7, loc="upper left")
fig.tight_layout()
fig.savefig(HERE / "ch03_nonlinearity.png", dpi=90)
print(HERE / "ch03_nonlinearity.png")
