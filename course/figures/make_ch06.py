"""Draw the ch06 figures from the reference solution.

python course/figures/make_ch06.py  ->  course/figures/ch06_feature_maps.png
                                        course/figures/ch06_receptive_field.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from torch import nn  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

cg = load_solution("ch06", "cnn_geometry")


def stages(in_channels, hw):
    """(label, C, H, W) after every layer of SmallCNN, computed with conv2d_output_hw."""
    model = cg.SmallCNN(in_channels, 10, hw)
    c, (h, w) = in_channels, hw
    rows = [("input", c, h, w)]
    names = ["conv5", "relu", "pool2", "conv3 p1", "relu", "pool2"]
    for name, layer in zip(names, model.features):
        if isinstance(layer, (nn.Conv2d, nn.MaxPool2d)):
            h, w = cg.conv2d_output_hw(
                h, w, layer.kernel_size, layer.stride, layer.padding, layer.dilation
            )
        if isinstance(layer, nn.Conv2d):
            c = layer.out_channels
        if name != "relu":
            rows.append((name, c, h, w))
    rows.append(("flatten", model.head.in_features, 1, 1))
    return rows, model.head


# --- feature-map sizes -----------------------------------------------------------------
fig, axes = plt.subplots(2, 1, figsize=(8, 4.6))
for ax, hw in zip(axes, [(28, 28), (20, 32)]):
    rows, head = stages(1, hw)
    x = 0.0
    for name, c, h, w in rows:
        if name == "flatten":
            ax.add_patch(Rectangle((x, -16), 1.5, 32, color="tab:orange", alpha=0.6))
            ax.text(x + 0.75, -20, f"{c}\nvalues", ha="center", va="top", fontsize=8)
            x += 6
            break
        ax.add_patch(Rectangle((x, -h / 2), w, h, color="tab:blue", alpha=0.25 + 0.04 * min(c, 16)))
        ax.text(x + w / 2, h / 2 + 2, name, ha="center", va="bottom", fontsize=8)
        ax.text(x + w / 2, -h / 2 - 2, f"{c}x{h}x{w}", ha="center", va="top", fontsize=8)
        x += w + 6
    ax.annotate(
        f"Linear({head.in_features}, 10)",
        (x, 0),
        fontsize=9,
        va="center",
        color="tab:orange",
    )
    ax.set_xlim(-2, x + 25)
    ax.set_ylim(-30, 28)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"SmallCNN on a {hw[0]}x{hw[1]} image (channels x height x width)", fontsize=9)
fig.tight_layout()
fig.savefig(HERE / "ch06_feature_maps.png", dpi=100)
plt.close(fig)

# --- receptive field: gradient of one output pixel -------------------------------------
model = cg.SmallCNN(1, 10, (28, 28))
probe = []
for layer in model.features:
    if isinstance(layer, nn.MaxPool2d):  # a max pool sends the gradient to one winner only
        layer = nn.AvgPool2d(layer.kernel_size, layer.stride, layer.padding)
    elif isinstance(layer, nn.Conv2d):
        with torch.no_grad():
            layer.weight.fill_(0.5)
            layer.bias.zero_()
    probe.append(layer)
x = torch.ones(1, 1, 28, 28, requires_grad=True)
y = nn.Sequential(*probe)(x)  # (1, 16, 6, 6)
y[0, 0, 3, 3].backward()
grad = x.grad[0, 0]
rh, rw = cg.receptive_field(model.features)
rows = (grad > 0).any(1).nonzero().flatten()
cols = (grad > 0).any(0).nonzero().flatten()
fig, ax = plt.subplots(figsize=(4.6, 4.2))
ax.imshow(grad, cmap="viridis")
ax.add_patch(
    Rectangle(
        (cols.min() - 0.5, rows.min() - 0.5), rw, rh, fill=False, edgecolor="white", linewidth=1.5
    )
)
ax.set_title(
    f"|d out[0, 0, 3, 3] / d input| on 28x28\nreceptive_field(features) = {rh}x{rw} (white box)",
    fontsize=9,
)
ax.set_xticks([])
ax.set_yticks([])
fig.tight_layout()
fig.savefig(HERE / "ch06_receptive_field.png", dpi=100)
plt.close(fig)
print(HERE / "ch06_feature_maps.png", HERE / "ch06_receptive_field.png")
