"""Draw the ch07 figures from the reference solution.

python course/figures/make_ch07.py  ->  course/figures/ch07_head_split.png
                                        course/figures/ch07_causal_mask.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

at = load_solution("ch07", "attention")

# --- which positions each head sees -----------------------------------------------------
B, T, E, H = 1, 4, 8, 2
x = torch.arange(32).reshape(B, T, E)  # position t holds the numbers 8t .. 8t+7
splits = {
    "x.reshape(1, 2, 4, 4)  (the bug)": x.reshape(B, H, T, E // H),
    "split_heads(x, 2) = x.view(1, 4, 2, 4).transpose(1, 2)": at.split_heads(x, H),
}
colours = plt.get_cmap("tab10")
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
for ax, (title, heads) in zip(axes, splits.items()):
    for h in range(H):
        for r in range(T):
            for d in range(E // H):
                value = int(heads[0, h, r, d])
                pos = value // E
                x0 = h * (E // H + 1) + d
                ax.add_patch(plt.Rectangle((x0, -r - 1), 1, 1, color=colours(pos), alpha=0.55))
                ax.text(x0 + 0.5, -r - 0.5, str(value), ha="center", va="center", fontsize=8)
        ax.text(h * (E // H + 1) + 2, 0.3, f"head {h}", ha="center", fontsize=9)
    for r in range(T):
        ax.text(-0.3, -r - 0.5, f"row {r}", ha="right", va="center", fontsize=8)
    ax.set_xlim(-1.8, 2 * (E // H) + 1.2)
    ax.set_ylim(-T - 0.2, 1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9)
handles = [plt.Rectangle((0, 0), 1, 1, color=colours(t), alpha=0.55) for t in range(T)]
fig.legend(handles, [f"position {t}" for t in range(T)], loc="lower center", ncol=T, fontsize=8)
fig.suptitle("x = arange(32).reshape(1, 4, 8): the numbers each head receives", fontsize=10)
fig.tight_layout(rect=(0, 0.08, 1, 0.95))
fig.savefig(HERE / "ch07_head_split.png", dpi=100)
plt.close(fig)

# --- the causal mask and the weights it produces ---------------------------------------
T = 6
mask = at.causal_mask(T)
torch.manual_seed(0)
model = at.MultiHeadSelfAttention(16, 2, causal=True)
with torch.no_grad():
    model(torch.randn(1, T, 16))
weights = model.last_weights[0, 0]
fig, axes = plt.subplots(1, 2, figsize=(8, 3.8))
axes[0].imshow(mask, cmap="Greens", vmin=-0.3, vmax=1.2)
for i in range(T):
    for j in range(T):
        axes[0].text(
            j,
            i,
            "T" if mask[i, j] else "F",
            ha="center",
            va="center",
            fontsize=8,
            color="white" if mask[i, j] else "k",
        )
axes[0].set_title("causal_mask(6): True = may attend", fontsize=9)
axes[1].imshow(weights, cmap="viridis", vmin=0, vmax=1)
for i in range(T):
    for j in range(T):
        w = weights[i, j].item()
        label = "0" if w == 0 else f"{w:.2f}"
        axes[1].text(
            j, i, label, ha="center", va="center", fontsize=7, color="white" if w < 0.6 else "k"
        )
axes[1].set_title("head 0 weights: rows sum to 1, future exactly 0", fontsize=9)
for ax in axes:
    ax.set_xlabel("key position j")
    ax.set_ylabel("query position i")
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
fig.tight_layout()
fig.savefig(HERE / "ch07_causal_mask.png", dpi=100)
plt.close(fig)
print(HERE / "ch07_head_split.png", HERE / "ch07_causal_mask.png")
