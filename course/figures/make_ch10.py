"""Draw the ch10 figure and samples from the reference solution: the same GPT trained on
next-token targets and on copy targets (y == x), side by side.

python course/figures/make_ch10.py  ->  course/figures/ch10_shift.png, course/figures/ch10_samples.txt
(about a minute on 2 CPU cores)
"""

import collections
import math
from pathlib import Path

import matplotlib
import torch
import torch.nn.functional as F

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

gpt = load_solution("ch10", "gpt")

torch.set_num_threads(1)
TEXT = (HERE.parent / "data/ch10_corpus.txt").read_text()
CFG = dict(steps=300, block_size=32, batch_size=16, n_layer=2, n_head=4, n_embd=64, lr=3e-3)


def copy_batch(data, block_size, batch_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    return x, x.clone()


def next_token_loss(model, data, block_size):
    n = (len(data) - 1) // block_size
    x, y = (
        data[: n * block_size].view(n, block_size),
        data[1 : n * block_size + 1].view(n, block_size),
    )
    with torch.no_grad():
        logits, _ = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


def smooth(v, k=10):
    return [
        sum(v[max(0, i - k + 1) : i + 1]) / len(v[max(0, i - k + 1) : i + 1]) for i in range(len(v))
    ]


counts = collections.Counter(TEXT)
h1 = -sum(c / len(TEXT) * math.log(c / len(TEXT)) for c in counts.values())
runs = {
    "next-token targets  y = data[i+1 : i+T+1]": None,
    "copy targets  y = data[i : i+T]": copy_batch,
}
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
lines = [
    f"corpus: {len(TEXT)} characters, vocabulary {len(counts)}, ln(vocab) = {math.log(len(counts)):.2f}, "
    f"unigram entropy = {h1:.2f} nats",
    f"config: {CFG}",
    "",
]
for ax, (name, fn) in zip(axes, runs.items()):
    r = gpt.train_gpt(TEXT, seed=0, batch_fn=fn, **CFG)
    true_val = next_token_loss(r.model, r.val_data, CFG["block_size"])
    final = sum(r.train_losses[-10:]) / 10
    ax.plot(smooth(r.train_losses), label="training loss (its own targets)")
    ax.axhline(
        r.val_loss, color="C1", ls="--", label=f"val loss, its own targets: {r.val_loss:.4f}"
    )
    ax.axhline(true_val, color="C3", ls="-.", label=f"val loss, true next tokens: {true_val:.2f}")
    ax.axhline(
        math.log(len(counts)),
        color="gray",
        ls=":",
        label=f"uniform guess ln V = {math.log(len(counts)):.2f}",
    )
    ax.set_yscale("log")
    ax.set_title(name, fontsize=9)
    ax.set_xlabel("step")
    ax.legend(fontsize=7, loc="lower left")
    prompt = torch.tensor([r.tokenizer.encode("The keeper ")])
    greedy = gpt.generate(r.model, prompt, 120, 1e-4, torch.Generator().manual_seed(0))
    sampled = gpt.generate(r.model, prompt, 120, 0.8, torch.Generator().manual_seed(0))
    check = gpt.check_targets(
        *(fn or gpt.get_batch)(r.val_data, 32, 8, torch.Generator().manual_seed(0))
    )
    lines += [
        f"== {name}",
        f"final train loss (mean of last 10 steps) {final:.4f}; val loss with its own targets {r.val_loss:.4f}; "
        f"val loss on true next tokens {true_val:.3f}",
        f"check_targets on one of its batches: {check}",
        "greedy (temperature 1e-4):  " + repr(r.tokenizer.decode(greedy[0])),
        "sampled (temperature 0.8):  " + repr(r.tokenizer.decode(sampled[0])),
        "",
    ]
axes[0].set_ylabel("cross-entropy (nats, log scale)")
fig.suptitle("The same GPT, the same 300 steps: only the target window differs", fontsize=10)
fig.tight_layout()
fig.savefig(HERE / "ch10_shift.png", dpi=100)
(HERE / "ch10_samples.txt").write_text("\n".join(lines))
print("\n".join(lines))
