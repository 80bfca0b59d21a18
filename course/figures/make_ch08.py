"""Draw the ch08 figure: the book's transfer setup (flat loss) beside the repaired one.

python course/figures/make_ch08.py   ->  course/figures/ch08_flat_loss.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

dbg = load_solution("ch08", "debugging")


def books_setup(model):
    for p in model.features.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)
    return model, optimizer


batch = dbg.make_task(256, seed=1)
curves = {}
for label, setup in (
    ("optimizer built before the head swap", books_setup),
    ("repaired: swap first, then optimizer", dbg.build_transfer_setup),
):
    torch.manual_seed(0)
    model, opt = setup(dbg.TransferNet())
    curves[label] = dbg.train_steps(model, opt, F.cross_entropy, batch, 200)

fig, ax = plt.subplots(figsize=(6.5, 3.6))
for (label, losses), style in zip(curves.items(), ("--", "-")):
    ax.plot(losses, "k" + style, label=f"{label} ({losses[0]:.6f} -> {losses[-1]:.6f})")
ax.set_xlabel("step")
ax.set_ylabel("cross-entropy loss")
ax.set_title("Frozen features, new head: 200 steps of SGD (lr 0.1)")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(HERE / "ch08_flat_loss.png", dpi=100)
print(HERE / "ch08_flat_loss.png")
