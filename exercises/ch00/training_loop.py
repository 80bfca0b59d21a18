"""ch00 — What are we actually doing? One parameter, one prediction, one loss, one
gradient, one update. Read course/ch00.md, then replace each NotImplementedError."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class TrainResult(NamedTuple):
    """Final weight, and one row per step: ``ws[k]`` made the prediction scored by ``losses[k]``."""

    w: float
    ws: list[float]
    losses: list[float]


def gradient_at(w: float, x: float, target: float) -> float:
    """d/dw of (x*w - target)**2 at ``w``, obtained with autograd. Returns a Python float."""
    raise NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")


def train_scalar(
    xs: list[float], targets: list[float], w0: float, lr: float, steps: int
) -> TrainResult:
    """Fit y = w*x by mean squared error with plain gradient descent for ``steps`` steps.

    The update happens under ``torch.no_grad()`` and the gradient is zeroed every step.
    Row k of (ws, losses) is one coherent state: the w used for prediction k and its loss.
    """
    raise NotImplementedError("ch00.2 train_scalar — see course/ch00.md#the-loop")


def classify_curve(losses: list[float]) -> str:
    """Name the shape of a loss curve: "converging", "slow", "oscillating" or "diverging".

    diverging: the loss ends non-finite or far above where it started;
    oscillating: it goes up and down repeatedly without a clear fall;
    converging: it fell to a small fraction (10% or less) of its start;
    slow: it falls steadily but has not got there.
    Only reads ``losses``: the caller's list is not changed.
    """
    raise NotImplementedError("ch00.3 classify_curve — see course/ch00.md#reading-a-curve")


def plot_losses(losses: list[float], path: str | Path) -> Path:
    """Save a learning curve (loss per step, log scale when useful) as PNG bytes at exactly
    ``path``, whatever its suffix (or none); returns the path. ``losses`` is not changed."""
    raise NotImplementedError("ch00.4 plot_losses — see course/ch00.md#reading-a-curve")
