# %% [markdown]
# # Lab ch04 — used by the model, but not part of it
#
# The reading (`course/ch04.md`) opens with a classifier whose hidden blocks sit in a
# plain Python list. It trains to a good score, saves, reloads with "All keys matched",
# and the reloaded model is back to guessing. This lab runs that program, asks for your
# prediction first, and then points the tools *you* write in `exercises/ch04/modules.py`
# at it. A cell that calls your code prints `TODO` until you have written that part; the
# notebook still runs to its end.

# %%
import io
import pathlib
import sys
import tempfile

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

md = lab.module("ch04")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# The encoder from the top of the reading, kept here as it is so that it stays broken
# whatever you do to your own `Encoder`.


# %%
class BrokenEncoder(nn.Module):
    def __init__(self, d_in=2, hidden=16, depth=3):
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = [md.Block(hidden) for _ in range(depth)]  # a plain list

    def forward(self, x):
        h = torch.relu(self.stem(x))
        for block in self.blocks:
            h = block(h)
        return h


class BrokenClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = BrokenEncoder()
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


def book_run(make_model, epochs=200):
    """XOR data from seed 0, the model built right after, Adam lr 1e-2, full batch."""
    Xtr, ytr, Xva, yva = md.xor_data(2000, 0)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses, accs = [], []
    for _ in range(epochs):
        loss = F.cross_entropy(model(Xtr), ytr)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        accs.append(accuracy(model, Xva, yva))
    return model, opt, losses, accs, (Xva, yva)


def reload(make_model, model):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    fresh = make_model()
    report = fresh.load_state_dict(torch.load(buffer))
    return fresh, report


# %% [markdown]
# **Predict before you run the next cell.** Will it learn XOR? What will the reloaded
# model score? Will anything warn?

# %%
my_guess = {"val accuracy after 200 epochs": None, "after reload": None, "any warning": None}

# %%
blocks_before = None


def make_broken():
    global blocks_before
    model = BrokenClassifier()
    blocks_before = [b.linear.weight.detach().clone() for b in model.encoder.blocks]
    return model


broken, broken_opt, losses, accs, (Xva, yva) = book_run(make_broken)
fresh, report = reload(BrokenClassifier, broken)
reloaded = accuracy(fresh, Xva, yva)
print("load_state_dict says:", report)
print(f"epoch 0: loss {losses[0]:.4f}, val {accs[0]:.4f}")
print(f"epoch 199: loss {losses[-1]:.4f}, val {accs[-1]:.4f};  after reload: val {reloaded:.4f}")
lab.check("broken, epoch 0", f"loss {losses[0]:.4f}, val {accs[0]:.4f}")
lab.check("broken, epoch 199", f"loss {losses[-1]:.4f}, val {accs[-1]:.4f}")
lab.check("broken, after reload", f"val {reloaded:.4f}")
lab.check("share of class 0 in validation", f"{(yva == 0).float().mean().item():.4f}")

# %% [markdown]
# ## What to observe
#
# Parameters seen against parameters used, and whether the blocks ever moved:

# %%
seen = sum(p.numel() for p in broken.parameters())
used = seen + sum(p.numel() for b in broken.encoder.blocks for p in b.parameters())
lab.check("parameters() yields", f"**{seen}**")
lab.check("forward() uses", f"**{used}**")
moved = max(
    (b.linear.weight - w0).abs().max().item() for b, w0 in zip(broken.encoder.blocks, blocks_before)
)
print(f"largest change of any block weight over 200 Adam steps: {moved}")
print("state_dict keys:", list(broken.state_dict()))
broken.to(torch.float64).eval()
print(
    "after .to(float64).eval(): stem",
    broken.encoder.stem.weight.dtype,
    "| block 0",
    broken.encoder.blocks[0].linear.weight.dtype,
    "training",
    broken.encoder.blocks[0].training,
)
print(
    "block 0 .grad is set (zero_grad never reaches it):",
    broken.encoder.blocks[0].linear.weight.grad is not None,
)

# %% [markdown]
# ## Repair the Encoder (task ch04.1)
#
# The same run with *your* `Classifier` (its `Encoder` is the one you repair).

# %%
model, opt, fixed_losses, fixed_accs, _ = book_run(md.Classifier)
fresh_fixed, fixed_report = reload(md.Classifier, model)
print(f"your Classifier: {sum(p.numel() for p in model.parameters())} parameters")
print(
    f"epoch 0: loss {fixed_losses[0]:.4f}, val {fixed_accs[0]:.4f};  epoch 199: val {fixed_accs[-1]:.4f}"
)
print(f"after reload: val {accuracy(fresh_fixed, Xva, yva):.4f}  ({fixed_report})")
if isinstance(model.encoder.blocks, nn.Module):
    lab.check("repaired, epoch 199", f"val {fixed_accs[-1]:.3f}")

fig, ax = plt.subplots(figsize=(4.5, 2.8))
ax.plot(accs, label="plain list")
ax.plot(fixed_accs, label="your Encoder")
ax.axhline(reloaded, color="C0", ls="--", lw=0.8, label="plain list, reloaded")
ax.set_xlabel("epoch")
ax.set_ylabel("validation accuracy")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## What did PyTorch not register? (task ch04.2)

# %%
print("the broken model:", lab.attempt(md.unregistered_state, BrokenClassifier()))
print("your Classifier: ", lab.attempt(md.unregistered_state, md.Classifier()))

# %% [markdown]
# ## What does the optimizer own? (task ch04.3)
#
# An optimizer built over equal-valued copies updates nothing in the model.

# %%
m = md.Classifier()
copies = torch.optim.SGD([p.detach().clone().requires_grad_() for p in m.parameters()], lr=0.1)
print("over copies:", lab.attempt(md.optimizer_coverage, m, copies))
built_before = torch.optim.SGD(m.parameters(), lr=0.1)
m.head = nn.Linear(16, 2)  # a new head after the optimizer was built
print("after swapping the head:", lab.attempt(md.optimizer_coverage, m, built_before))

# %% [markdown]
# ## Buffers (task ch04.4)
#
# Your `RunningNorm` next to `nn.BatchNorm1d(4, affine=False)`, one training step then
# eval.

# %%
torch.manual_seed(0)
xb = torch.randn(8, 4) * 3 + 1
bn = nn.BatchNorm1d(4, affine=False)
norm = lab.attempt(md.RunningNorm, 4)
if norm is not None:
    out_t = lab.attempt(norm, xb)
    if out_t is not None:
        print(f"training output differs by {(out_t - bn(xb)).abs().max():.1e}")
        print(f"running_var differs by {(norm.running_var - bn.running_var).abs().max():.1e}")
        print(
            "buffers:",
            [n for n, _ in norm.named_buffers()],
            " parameters:",
            [n for n, _ in norm.named_parameters()],
        )
        norm.eval()
        bn.eval()
        print(f"eval output differs by {(norm(xb) - bn(xb)).abs().max():.1e}")

# %% [markdown]
# ## A checkpoint round trip (task ch04.5)
#
# Save the repaired run with its Adam state, reload into fresh objects, and take one more
# step on both sides.

# %%
path = pathlib.Path(tempfile.mkdtemp()) / "ch04.pt"
saved = lab.attempt(md.save_checkpoint, path, model, opt, epoch=200)
if saved is not None:
    twin = md.Classifier()
    twin_opt = torch.optim.Adam(twin.parameters(), lr=1e-2)
    extra = lab.attempt(md.load_checkpoint, path, twin, twin_opt)
    if extra is not None:
        Xtr, ytr, _, _ = md.xor_data(2000, 0)
        for mod, o in ((model, opt), (twin, twin_opt)):
            o.zero_grad()
            F.cross_entropy(mod(Xtr), ytr).backward()
            o.step()
        same = all(torch.equal(a, b) for a, b in zip(model.parameters(), twin.parameters()))
        print(f"extras {extra};  identical after one more Adam step: {same}")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch04` runs them:

# %%
lab.run_tests("ch04")
