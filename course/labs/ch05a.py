# %% [markdown]
# # Lab ch05a — what does the model actually see?
#
# The reading (`course/ch05a.md`) trains a small MLP on raw pixel values: it runs, the loss
# falls after the first epoch, and validation accuracy ends at exactly 0.40. This lab runs
# that program, looks inside the network afterwards, and then uses what *you* write in
# `exercises/ch05a/transforms.py` — the normalizer, the input contract, the label-aware
# flip and the repaired pipeline. Cells that call your code say `TODO` until you have
# written that part.

# %%
import math
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

tf = lab.module("ch05a")  # your module (set COURSE_IMPL=solutions to see the reference)


def interval(lo, hi, digits):
    """[lo, hi] as the reading writes it (a typographic minus sign)."""
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]".replace("-", "\N{MINUS SIGN}")


# %% [markdown]
# ## The data
#
# 6×6 RGB images, uint8; a bright vertical stripe on the left, in the middle or on the right
# is the class, on a background whose brightness varies from image to image.

# %%
train_x, train_y, val_x, val_y = tf.make_stripe_task(0)
print("train:", tuple(train_x.shape), train_x.dtype, " val:", tuple(val_x.shape))
print("class shares:", [round(v, 2) for v in (torch.bincount(train_y) / len(train_y)).tolist()])
print("image 0, channel 0 (class", train_y[0].item(), "):")
print(train_x[0, 0])

# %% [markdown]
# ## The broken program
#
# The pipeline is `.float()` and nothing else. The training loop is the one in your module's
# `train_with_pipeline`, written out so that we can look at the network afterwards.
#
# **Predict before you run the next cell.** How large are the untrained network's logits?
# What is the mean loss of the first epoch, and the validation accuracy after 20 epochs?

# %%
my_guess = {
    "untrained logits (order of magnitude)": None,
    "first-epoch loss": None,
    "val accuracy": None,
}


# %%
def train_book(train_in, val_in, seed=0, epochs=20):
    """The reading's run: the MLP, SGD at lr 0.01, batches of 32 in a seeded order."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(108, 32), nn.ReLU(), nn.Linear(32, 3))
    with torch.no_grad():
        print(
            "untrained logits of image 0:", [round(v, 1) for v in model(train_in[:1])[0].tolist()]
        )
    order = torch.Generator().manual_seed(seed)
    epoch_losses = []
    for epoch in range(epochs):
        total = 0.0
        for k, idx in enumerate(torch.randperm(len(train_in), generator=order).split(32)):
            loss = F.cross_entropy(model(train_in[idx]), train_y[idx])
            if epoch == 0:
                print(f"  epoch 0, batch {k}: loss {loss.item():9.2f}")
            model.zero_grad()
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.01 * p.grad
            total += loss.item() * len(idx)
        epoch_losses.append(total / len(train_in))
    with torch.no_grad():
        accuracy = (model(val_in).argmax(dim=1) == val_y).float().mean().item()
    return model, epoch_losses, accuracy


train_in, val_in = train_x.float(), val_x.float()  # the "pipeline"
model, losses, accuracy = train_book(train_in, val_in)
seen = torch.cat([train_in.flatten(), val_in.flatten()])
lab.check("raw inputs the model saw", interval(seen.min().item(), seen.max().item(), 0))
lab.check("raw first-epoch loss", f"{losses[0]:.0f}")
lab.check("raw last-epoch loss", f"{losses[-1]:.3f}")
lab.check("raw val accuracy", f"{accuracy:.2f}")

# %% [markdown]
# Two batches of the first epoch have losses in the thousands; after them the loss sits at
# about 1.1 and never moves again. What is left of the hidden layer?

# %%
with torch.no_grad():
    hidden = model[:3](torch.cat([train_in, val_in]))  # after the ReLU, (300, 32)
    predicted = model(val_in).argmax(dim=1)
dead = int((hidden.amax(dim=0) == 0).sum())
lab.check("hidden units that are zero for every image", f"all {dead} of them")
print("classes the model predicts on validation:", predicted.unique().tolist())
entropy = -(0.4 * math.log(0.4) + 2 * 0.3 * math.log(0.3))
lab.check("entropy of the 40/30/30 prior", f"{entropy:.2f}")

# %% [markdown]
# Every hidden unit is dead, so the output is the last layer's bias alone: the same class for
# every image, the largest one — 40 % of the validation set.
#
# ## uint8 arithmetic
#
# **Predict before you run the next cell.** For the uint8 tensor `[200, 100]`: what do
# `.sum()`, `x * x` and `.mean()` give?

# %%
my_guess = {"x.sum()": None, "x * x": None, "x.mean()": None}

# %%
x = torch.tensor([200, 100], dtype=torch.uint8)
print("x.sum():", x.sum(), "- promoted, dtype", x.sum().dtype)
print("x * x:  ", x * x, "- 40000 and 10000, wrapped modulo 256")
for name in ("mean", "std"):
    try:
        getattr(x, name)()
    except RuntimeError as exc:
        print(f"x.{name}() raises RuntimeError: {exc}")
print("x.float().mean():", x.float().mean())
try:
    model(train_x)  # a float model fed the decoder's uint8 images
except RuntimeError as exc:
    print("the float model on uint8 images:", exc)

# %% [markdown]
# ## Fit on the training data only (task ch05a.1)

# %%
norm = lab.attempt(tf.fit_normalizer, train_x)
if norm is not None:
    print("mean per channel:", [round(v, 2) for v in norm.mean.tolist()], norm.mean.dtype)
    print("std per channel: ", [round(v, 2) for v in norm.std.tolist()])
    scaled = lab.attempt(norm.apply, val_x)
    if scaled is not None:
        alone = lab.attempt(norm.apply, val_x[:1])
        print(
            "validation after the training statistics:",
            scaled.dtype,
            f"mean {scaled.mean():.3f}, std {scaled.std():.3f}",
        )
        if alone is not None:
            print("one image alone equals it inside the batch:", torch.equal(alone, scaled[:1]))

# %% [markdown]
# ## A legal tensor, a wrong meaning (task ch05a.2)
#
# Channel order can only be seen where channels differ, so this contract describes images
# scaled to [0, 1] whose green and blue channels are dimmer than red.

# %%
tint = torch.tensor([1.0, 0.7, 0.4]).view(1, 3, 1, 1)
good = train_x.float() / 255 * tint  # (240, 3, 6, 6), float32 in [0, 1]
flat = good.transpose(0, 1).reshape(3, -1)
contract = tf.Contract(
    torch.float32, (0.0, 1.0), tuple(flat.mean(1).tolist()), tuple(flat.std(1).tolist())
)
print(
    "contract:",
    [round(v, 3) for v in contract.channel_mean],
    [round(v, 3) for v in contract.channel_std],
)

# %% [markdown]
# **Predict before you run the next cell.** Which clauses does each batch break: the correct
# one, the raw uint8 pixels, a float64 copy in BGR order, and channels-last?

# %%
my_guess = {"correct": None, "raw uint8": None, "float64 BGR": None, "channels last": None}


# %%
def kinds(found):
    names = [v.split(":")[0] for v in found]
    return ", ".join(names[:-1]) + ", and " + names[-1] if len(names) > 2 else " and ".join(names)


batches = {
    "correct": good,
    "raw uint8": (train_x.float() * tint).to(torch.uint8),
    "float64 BGR": good.double().flip(1),
    "channels last": good.permute(0, 2, 3, 1).contiguous(),
}
for name, batch in batches.items():
    found = lab.attempt(tf.check_contract, batch, contract)
    if found is not None:
        print(f"{name}: {len(found)} violation(s)")
        for v in found:
            print("   ", v)
        if name == "raw uint8":
            lab.check("what a raw uint8 batch breaks", kinds(found))

# %% [markdown]
# ## Augmentations that change the answer (task ch05a.3)
#
# An arrow pointing left, 3×3×3 (`C == H == W`, so a flip along the wrong axis keeps the
# shape).

# %%
shape = torch.tensor([[0, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=torch.uint8)  # "<"
arrow = shape * torch.tensor([1, 2, 3], dtype=torch.uint8).view(3, 1, 1)  # channels differ
flipped = lab.attempt(tf.flip_with_label, arrow, tf.LEFT)
if flipped is not None:
    image, label = flipped
    names = {tf.LEFT: "LEFT", tf.RIGHT: "RIGHT", tf.UP: "UP", tf.DOWN: "DOWN"}
    print(
        "channel 0 before:\n",
        arrow[0],
        "\nafter:\n",
        image[0],
        "\nlabel LEFT ->",
        names[int(label)],
    )
both = lab.attempt(
    tf.flip_with_label, arrow.expand(4, 3, 3, 3), torch.tensor([tf.LEFT, tf.RIGHT, tf.UP, tf.DOWN])
)
if both is not None:
    print("labels LEFT, RIGHT, UP, DOWN become", both[1].tolist())

# %% [markdown]
# ## The repair (task ch05a.4)
#
# **Predict before you run the next cell.** With the training images standardized per
# channel: the range of the inputs, the first-epoch loss and the validation accuracy?

# %%
my_guess = {"scaled input range": None, "first-epoch loss": None, "val accuracy": None}

# %%
raw = tf.train_with_pipeline(False)
run = lab.attempt(tf.train_with_pipeline, True)
print("pipeline         inputs            first epoch  last epoch  val accuracy")
for name, r in (("float() only", raw), ("with scaling", run)):
    if r is not None:
        print(
            f"{name:16} {interval(r.input_min, r.input_max, 1):17} {r.epoch_losses[0]:11.4g} "
            f"{r.epoch_losses[-1]:11.3f} {r.val_accuracy:13.2f}"
        )
if run is not None and run.normalizer is None:
    print("scale=True still trains on raw pixels: the repair is not done yet")
elif run is not None:
    lab.check("scaled inputs the model saw", interval(run.input_min, run.input_max, 1))
    lab.check("scaled first-epoch loss", f"{run.epoch_losses[0]:.2f}")
    lab.check("scaled last-epoch loss", f"{run.epoch_losses[-1]:.2f}")
    lab.check("scaled val accuracy", f"{run.val_accuracy:.2f}")

# %%
import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(1, 2, figsize=(6, 2.2))
axes[0].hist(train_x.float().flatten(), bins=40, color="tab:red")
axes[0].set_title("what the raw run sees", fontsize=9)
if norm is not None and scaled is not None:
    axes[1].hist(norm.apply(train_x).flatten(), bins=40, color="tab:green")
axes[1].set_title("after your normalizer", fontsize=9)
fig.tight_layout()
fig.savefig(lab.figure_path("ch05a_inputs.png"), dpi=80)
plt.show()

# %% [markdown]
# The same shape, moved and narrowed. Across seeds the raw run's first epoch varies a lot;
# its end does not:

# %%
runs = [tf.train_with_pipeline(False, seed) for seed in range(5)]
firsts = [r.epoch_losses[0] for r in runs]
accs = [r.val_accuracy for r in runs]
print("raw first-epoch losses, seeds 0-4:", [round(v) for v in firsts])
print("raw val accuracies:", [round(a, 2) for a in accs])
lab.check("raw first-epoch loss over seeds 0-4", f"from {min(firsts):.0f} to {max(firsts):.0f}")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch05a` runs them:

# %%
lab.run_tests("ch05a")
