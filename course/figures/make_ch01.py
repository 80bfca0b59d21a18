"""Draw the ch01 figures from the reference solution.

python course/figures/make_ch01.py  ->  course/figures/ch01_silent_broadcast.png
                                        course/figures/ch01_strides.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

sh = load_solution("ch01", "shapes")


def fit(broken: bool, steps: int = 300):
    """The chapter's regression: y has shape (B,), the model predicts (B, 1)."""
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = x @ torch.tensor([2.0, -1.0, 0.5]) + 0.1 * torch.randn(64)  # (64,)
    layer = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    target = y if broken else y[:, None]  # (64,) broadcasts against (64, 1) to (64, 64)
    losses = []
    for _ in range(steps):
        loss = ((layer(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        true_mse = ((layer(x).detach()[:, 0] - y) ** 2).mean().item()
        losses.append(true_mse)
    return losses, layer(x).detach()[:, 0], y


# ---- figure 1: the silent broadcast, seen in the loss and in the trace ----------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
for broken, label in [(False, "target y[:, None]  (64, 1)"), (True, "target y  (64,) - broken")]:
    losses, pred, y = fit(broken)
    ax1.plot(losses, label=f"{label}: final MSE {losses[-1]:.2f}")
    if broken:
        ax2.scatter(y, pred, s=10, color="C1", label="broken: predicts ~ mean(y)")
    else:
        ax2.scatter(y, pred, s=10, color="C0", label="fixed")
ax1.set_yscale("log")
ax1.set_xlabel("step")
ax1.set_ylabel("true per-example MSE")
ax1.set_title("same model, same data, one missing axis")
ax1.legend(fontsize=7, loc="upper right")
ax2.set_xlabel("target y")
ax2.set_ylabel("prediction")
ax2.set_title("what the broken model learned")
ax2.legend(fontsize=7)
layer = torch.nn.Linear(3, 1)
trace = sh.trace_shapes(
    lambda a, b: ((layer(a) - b) ** 2).mean(), torch.randn(64, 3), torch.randn(64)
)
text = "\n".join(f"{i}: {name:<7} {tuple(s)}" for i, (name, s) in enumerate(trace))
ax1.text(
    0.03,
    0.05,
    "trace_shapes:\n" + text,
    transform=ax1.transAxes,
    fontsize=7,
    family="monospace",
    va="bottom",
    bbox=dict(facecolor="white", alpha=0.8, edgecolor="0.7"),
)
fig.tight_layout()
fig.savefig(HERE / "ch01_silent_broadcast.png", dpi=100)
print(HERE / "ch01_silent_broadcast.png")

# ---- figure 2: memory offsets of x and x.t() --------------------------------------
x = torch.arange(12.0).reshape(3, 4)
fig, axes = plt.subplots(1, 3, figsize=(9.5, 3.2), gridspec_kw={"width_ratios": [4, 3, 3]})
for ax, (label, t) in zip(
    axes, [("x  (3, 4)", x), ("x.t()  (4, 3)", x.t()), ("x.t().contiguous()", x.t().contiguous())]
):
    offsets = torch.empty(t.shape)
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            offsets[i, j] = t.storage_offset() + i * t.stride(0) + j * t.stride(1)
    ax.imshow(offsets, cmap="viridis", vmin=0, vmax=11)
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            ax.text(j, i, int(offsets[i, j]), ha="center", va="center", color="white", fontsize=10)
    view = "a view of x" if sh.is_view_of(t, x) else "a copy"
    ax.set_title(
        f"{label}, strides {t.stride()}\ncontiguous={t.is_contiguous()}, {view}", fontsize=9
    )
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle(
    "memory offset of each element: .view needs them to run 0, 1, 2, ... row by row", fontsize=9
)
fig.tight_layout()
fig.savefig(HERE / "ch01_strides.png", dpi=100)
print(HERE / "ch01_strides.png")
