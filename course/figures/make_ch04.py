"""Draw the ch04 figure from the reference solution: the book's run with the blocks in a
plain list and in an nn.ModuleList — validation accuracy while training and after a
reload, and how many parameters each model exposes versus uses.

python course/figures/make_ch04.py   ->  course/figures/ch04_registration.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

md = load_solution("ch04", "modules")


class PlainListEncoder(md.Encoder):
    """The chapter's broken encoder: same layers, blocks kept in a plain list."""

    def __init__(self, d_in=2, hidden=16, depth=3):
        torch.nn.Module.__init__(self)
        self.stem = torch.nn.Linear(d_in, hidden)
        self.blocks = [md.Block(hidden) for _ in range(depth)]


class PlainListClassifier(md.Classifier):
    def __init__(self):
        torch.nn.Module.__init__(self)
        self.encoder = PlainListEncoder()
        self.head = torch.nn.Linear(16, 2)


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


def book_run(make_model):
    Xtr, ytr, Xva, yva = md.xor_data(2000, 0)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    accs = []
    for _ in range(200):
        loss = F.cross_entropy(model(Xtr), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        accs.append(accuracy(model, Xva, yva))
    fresh = make_model()
    fresh.load_state_dict(model.state_dict())
    used = sum(p.numel() for p in model.parameters())
    used += sum(p.numel() for b in model.encoder.blocks for p in b.parameters()) * (
        not isinstance(model.encoder.blocks, torch.nn.ModuleList)
    )
    return accs, accuracy(fresh, Xva, yva), sum(p.numel() for p in model.parameters()), used


runs = {"plain list": book_run(PlainListClassifier), "nn.ModuleList": book_run(md.Classifier)}

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [3, 2]})
for (label, (accs, reloaded, _, _)), color in zip(runs.items(), ["#c0462a", "#2b5fb4"]):
    ax1.plot(accs, color=color, label=f"{label}: trained {accs[-1]:.4f}")
    ax1.scatter([215], [reloaded], color=color, marker="D", zorder=3)
    ax1.annotate(
        f"reloaded {reloaded:.4f}",
        (215, reloaded),
        xytext=(-10, 8),
        textcoords="offset points",
        ha="right",
        fontsize=8,
        color=color,
    )
ax1.axvline(207, color="grey", lw=0.8, ls=":")
ax1.set_xlim(-5, 225)
ax1.set_ylim(0.45, 1.02)
ax1.set_xlabel("epoch (Adam lr 1e-2, full batch); diamonds: a fresh model after load_state_dict")
ax1.set_ylabel("validation accuracy")
ax1.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 0.03))
ax1.set_title("load_state_dict said 'All keys matched' both times", fontsize=10)

labels = list(runs)
exposed = [runs[k][2] for k in labels]
used = [runs[k][3] for k in labels]
x = torch.arange(len(labels)).float()
ax2.bar(x - 0.2, used, width=0.4, color="#999999", label="used by forward()")
ax2.bar(x + 0.2, exposed, width=0.4, color="#2b5fb4", label="seen by parameters()")
for xi, v in zip(x + 0.2, exposed):
    ax2.text(xi, v + 15, str(v), ha="center", fontsize=8)
for xi, v in zip(x - 0.2, used):
    ax2.text(xi, v + 15, str(v), ha="center", fontsize=8)
ax2.set_xticks(x, labels)
ax2.set_ylabel("parameters")
ax2.set_ylim(0, 1250)
ax2.legend(fontsize=8, loc="upper center", ncol=2)
ax2.set_title("what the optimizer and state_dict can see", fontsize=10)
fig.tight_layout()
fig.savefig(HERE / "ch04_registration.png", dpi=90)
print(HERE / "ch04_registration.png", {k: (v[0][-1], v[1], v[2], v[3]) for k, v in runs.items()})
