# %% [markdown]
# # Lab ch06 — which axis is the channel axis?
#
# The reading (`course/ch06.md`) opens with a channels-last batch handed to a convolution,
# the error PyTorch raises, and the one-number "fix" that makes the error go away. This lab
# runs that program, asks for your prediction before each result, and then points the
# functions *you* write in `exercises/ch06/cnn_geometry.py` at the same tensors. Cells
# that call your code say `TODO` until you have written that part; nothing here stops the
# notebook.

# %%
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from harness import lab  # noqa: E402

cg = lab.module("ch06")  # your module (set COURSE_IMPL=solutions to see the reference)
torch.set_num_threads(1)

# %% [markdown]
# ## The broken program
#
# A loader stacks channels-last images into `[B, H, W, C]`. Here are 32 RGB images of
# 224×224: a bright disc on a dark background, a little noise, and a colour that changes
# from image to image. The first layer is declared the usual way, `nn.Conv2d(3, 8, 3)`.

# %%
g = torch.Generator().manual_seed(6)
rows, cols = torch.meshgrid(torch.arange(224.0), torch.arange(224.0), indexing="ij")
disc = (((rows - 80) ** 2 + (cols - 130) ** 2) < 50**2).float()  # [224, 224]
colour = torch.rand(32, 1, 1, 3, generator=g)
batch = disc[None, :, :, None] * colour + 0.05 * torch.rand(32, 224, 224, 3, generator=g)
print("batch:", list(batch.shape), "(B, H, W, C)")

torch.manual_seed(0)
conv = nn.Conv2d(3, 8, kernel_size=3)
try:
    conv(batch)
except RuntimeError as err:
    print("RuntimeError:", err)
    lab.check("the error", str(err))

# %% [markdown]
# The message says the layer expected 3 channels and got 224. The tempting fix is to
# declare `nn.Conv2d(224, 8, 3)`.
#
# **Predict before you run the next cell.** Does it run? What shape do the features have,
# and how many parameters does the layer hold (the 3-channel layer holds 224)?

# %%
my_guess = {"runs": None, "feature shape": None, "parameters": None}

# %%
torch.manual_seed(0)
wrong = nn.Conv2d(224, 8, kernel_size=3)  # "it says 224 channels"
wrong_features = wrong(batch)
n_wrong = sum(p.numel() for p in wrong.parameters())
n_right = sum(p.numel() for p in conv.parameters())
print("features:", list(wrong_features.shape), "  weight:", list(wrong.weight.shape))
lab.check("the wrong fix's features", f"{list(wrong_features.shape)}")
lab.check("its parameters", f"{n_wrong} parameters instead of {n_right}")

# %% [markdown]
# It runs. `nn.Conv2d` reads dimension 1 as the channels, so the 224 rows became
# "channels" and the kernel slid over the image's columns and its three colours (hence
# the width 3 − 3 + 1 = 1). One way to see it: change a single pixel and look at which
# output positions move — for the wrong fix and for the same layer on the batch moved to
# `[B, C, H, W]` with `permute(0, 3, 1, 2)`.


# %%
def moved_outputs(layer, images, prepare):
    """Output positions (dims 2 and 3) that change when pixel (row 100, column 50) changes."""
    poked = images[:1].clone()
    poked[0, 100, 50, :] += 1.0
    with torch.no_grad():
        diff = (layer(prepare(poked)) - layer(prepare(images[:1]))).abs().amax(dim=(0, 1))
    where = diff.nonzero()
    return f"dim 2 in {where[:, 0].min().item()}..{where[:, 0].max().item()}, dim 3 in {where[:, 1].min().item()}..{where[:, 1].max().item()}"


print("wrong fix:       ", moved_outputs(wrong, batch, lambda x: x))
print("permuted, C = 3: ", moved_outputs(conv, batch, lambda x: x.permute(0, 3, 1, 2)))

for what, layer, images in [
    ("a 256x256 batch", wrong, torch.zeros(2, 256, 256, 3)),
    ("a 5x5 kernel", nn.Conv2d(224, 8, 5), batch[:2]),
]:
    try:
        layer(images)
    except RuntimeError as err:
        print(f"{what}: {err}")
        if "Kernel size" in str(err):
            lab.check("the 5x5 kernel", str(err).rsplit(". ", 1)[-1])

# %% [markdown]
# The wrong fix's output positions follow the pixel's *column* (50) and its colour, and
# the row is gone: every row is a "channel" with weights of its own. The picture makes
# the same point (channel 0 of image 0; the wrong fix's map is one value wide, stretched
# here so that it can be seen):

# %%
with torch.no_grad():
    right_map = conv(batch[:1].permute(0, 3, 1, 2))[0, 0]
    wrong_map = wrong_features[0, 0].detach()
fig, axes = plt.subplots(1, 3, figsize=(7.5, 2.6))
axes[0].imshow(batch[0].clamp(0, 1))
axes[0].set_title("image 0 [224, 224, 3]", fontsize=9)
axes[1].imshow(right_map, cmap="gray")
axes[1].set_title("permute + Conv2d(3, 8, 3)\n[222, 222]", fontsize=9)
axes[2].imshow(wrong_map, cmap="gray", aspect="auto")
axes[2].set_title("Conv2d(224, 8, 3)\n[222, 1]", fontsize=9)
for ax in axes:
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The reshape (task ch06.1)
#
# The next attempt keeps `nn.Conv2d(3, ...)` and makes the batch `[B, C, H, W]` with a
# reshape. `to_channels_first` in your module starts as exactly that.
#
# **Predict before you run the next cell.** For `x = torch.arange(54).reshape(2, 3, 3, 3)`
# (every value names its own position), what is `x.reshape(2, 3, 3, 3)[0, 0]` — the "red
# plane of image 0" — and what is `x.permute(0, 3, 1, 2)[0, 0]`?

# %%
my_guess = {"reshape [0, 0]": None, "permute [0, 0]": None}

# %%
x = torch.arange(2 * 3 * 3 * 3).reshape(2, 3, 3, 3)
print("reshape:\n", x.reshape(2, 3, 3, 3)[0, 0])
print("permute:\n", x.permute(0, 3, 1, 2)[0, 0])
print("strides before and after permute:", x.stride(), x.permute(0, 3, 1, 2).stride())
yours = lab.attempt(cg.to_channels_first, x)
if yours is not None:
    print("your to_channels_first:\n", yours[0, 0])
    print("every pixel in place:", torch.equal(yours, x.permute(0, 3, 1, 2)))

# %% [markdown]
# ## The head (tasks ch06.2 and ch06.3)
#
# Behind the conversion sits a classifier whose head was sized by hand for 28×28 images:
# `nn.Linear(16 * 12 * 12, 10)`, flattened with `view(-1, 16 * 12 * 12)`.
#
# **Predict before you run the next cell.** How many numbers per image come out of
# `features`? What does the head return for a batch of 4 images, and for a batch of 3?

# %%
my_guess = {"numbers per image": None, "logits for 4 images": None, "for 3 images": None}

# %%
torch.manual_seed(0)
features = nn.Sequential(
    nn.Conv2d(3, 8, 5),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
)
head = nn.Linear(16 * 12 * 12, 10)
per_image = features(torch.zeros(1, 3, 28, 28)).numel()
print("numbers per image:", per_image)
lab.check("numbers per image", f"{per_image}")
for b in (4, 3):
    images = torch.randn(b, 3, 28, 28, generator=g)
    try:
        logits = head(features(images).view(-1, 16 * 12 * 12))
        print(f"batch of {b}: logits {list(logits.shape)}")
        lab.check(f"logits for a batch of {b}", f"{list(logits.shape)}")
    except RuntimeError as err:
        print(f"batch of {b}: RuntimeError: {err}")

# %% [markdown]
# Four images became one row of logits, without an error. Your `conv2d_output_hw` walks a
# size through every layer; `SmallCNN` uses it to size its head.

# %%
for hw in [(28, 28), (20, 32)]:
    h, w = hw
    for layer in features:
        if isinstance(layer, (nn.Conv2d, nn.MaxPool2d)):
            step = lab.attempt(
                cg.conv2d_output_hw, h, w, layer.kernel_size, layer.stride, layer.padding
            )
            if step is None:
                break
            h, w = step
    else:
        print(f"{hw}: features 16 x {h} x {w} = {16 * h * w} per image")
        lab.check(f"numbers per image at {hw}", f"{16 * h * w}")

model = lab.attempt(cg.SmallCNN, 3, 10, (28, 28))
if model is not None:
    out = lab.attempt(model, torch.randn(4, 3, 28, 28, generator=g))
    print(f"SmallCNN head: Linear({model.head.in_features}, {model.head.out_features})")
    if out is not None:
        print("SmallCNN on 4 images:", list(out.shape))

# %% [markdown]
# ## What one pixel sees (task ch06.4)
#
# **Predict before you run the next cell.** How wide is the input window one pixel of the
# last feature map depends on?

# %%
my_guess = {"receptive field": None}

# %%
rf = lab.attempt(cg.receptive_field, features)
if rf is not None:
    print("receptive field:", rf)
    lab.check("receptive field", f"{rf[0]}×{rf[1]}")

# %% [markdown]
# ## The repair (task ch06.5)
#
# `ChannelsLastConv` in your module starts as the wrong fix: `in_channels` is the number
# the error reported. Repair it — `in_channels` is C, and the batch moves to
# `[B, C, H, W]` before the conv — and run this cell again.
#
# **Predict before you run the next cell.** With the stub as shipped, what shape comes
# out? After your repair?

# %%
my_guess = {"stub": None, "repaired": None}

# %%
stem = lab.attempt(cg.ChannelsLastConv, (224, 224, 3), 8)
feats = lab.attempt(stem, batch) if stem is not None else None
if feats is not None:
    print("ChannelsLastConv features:", list(feats.shape), " in_channels:", stem.conv.in_channels)
    if stem.conv.in_channels == 3:
        want = F.conv2d(batch.permute(0, 3, 1, 2), stem.conv.weight, stem.conv.bias)
        same = feats.shape == want.shape and torch.allclose(feats, want, atol=1e-5)
        print("equal to the conv over H and W:", same)
        if same:
            lab.check("repaired features", f"{list(feats.shape)}")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch06` runs them:

# %%
lab.run_tests("ch06")
