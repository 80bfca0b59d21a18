"""ben's ch00: gradient and training done, the curve classifier half-done, no plot."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch


class TrainResult(NamedTuple):
    w: float
    ws: list[float]
    losses: list[float]


def gradient_at(w: float, x: float, target: float) -> float:
    w_t = torch.tensor(float(w), requires_grad=True)
    ((x * w_t - target) ** 2).backward()
    return w_t.grad.item()


def train_scalar(xs, targets, w0, lr, steps) -> TrainResult:
    x, y = torch.tensor(xs), torch.tensor(targets)
    w = torch.tensor(float(w0), requires_grad=True)
    ws, losses = [], []
    for _ in range(steps):
        loss = ((x * w - y) ** 2).mean()
        ws.append(w.item())
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return TrainResult(w.item(), ws, losses)


def classify_curve(losses) -> str:
    # Half-done: forgets inf/nan and oscillation.
    if losses[-1] > losses[0]:
        return "diverging"
    return "converging" if losses[-1] < 0.5 * losses[0] else "slow"


def plot_losses(losses, path) -> None:
    raise NotImplementedError("ch00.4 plot_losses — see course/ch00.md#reading-a-curve")


assert math
