"""ch00 — What are we actually doing? One parameter, one prediction, one loss, one
gradient, one update. Reference solution."""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import torch


class TrainResult(NamedTuple):
    """Final weight, and one row per step: ``ws[k]`` made the prediction scored by ``losses[k]``."""

    w: float
    ws: list[float]
    losses: list[float]


def gradient_at(w: float, x: float, target: float) -> float:
    """d/dw of (x*w - target)**2 at ``w``, obtained with autograd. Returns a Python float."""
    w_t = torch.tensor(float(w), requires_grad=True)
    # floats before x and target meet the tensor: torch reads a Python int as an int64,
    # which holds no int of 2**63 or more
    loss = (float(x) * w_t - float(target)) ** 2
    loss.backward()
    return w_t.grad.item()


def train_scalar(
    xs: list[float], targets: list[float], w0: float, lr: float, steps: int
) -> TrainResult:
    """Fit y = w*x by mean squared error with plain gradient descent for ``steps`` steps.

    The update happens under ``torch.no_grad()`` and the gradient is zeroed every step.
    Row k of (ws, losses) is one coherent state: the w used for prediction k and its loss.
    """
    x = torch.as_tensor(xs, dtype=torch.float32)
    y = torch.as_tensor(targets, dtype=torch.float32)
    w = torch.tensor(float(w0), requires_grad=True)
    ws, losses = [], []
    for _ in range(steps):
        loss = ((w * x - y) ** 2).mean()
        ws.append(w.item())
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()
    return TrainResult(w.item(), ws, losses)


def classify_curve(losses: list[float]) -> str:
    """Name the shape of a loss curve: "converging", "slow", "oscillating" or "diverging".

    diverging: the loss ends non-finite or far above where it started;
    oscillating: it goes up and down repeatedly without a clear fall;
    converging: it fell to a small fraction (10% or less) of its start;
    slow: it falls steadily but has not got there.
    Only reads ``losses``: the caller's list is not changed.
    """
    if not losses:
        raise ValueError("classify_curve needs at least one loss value")
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    if last <= 0.1 * first:
        return "converging"
    return "slow"


def plot_losses(losses: list[float], path: str | Path) -> Path:
    """Save a learning curve (loss per step, log scale when useful) as PNG bytes at exactly
    ``path``, whatever its suffix (or none); returns the path. ``losses`` is not changed."""
    import matplotlib

    matplotlib.use("Agg")  # headless: no display on CI or in the grader
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(range(len(losses)), losses, marker=".")
    finite = [v for v in losses if math.isfinite(v)]
    if finite and min(finite) > 0 and max(finite) / min(finite) > 100:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title("learning curve")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
