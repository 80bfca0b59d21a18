"""ch08 — A model that refuses to learn: a transfer setup whose optimizer trains nothing,
a diagnostic that names why a run is stuck, and the one-batch overfitting check.
Read course/ch08.md, then
repair the marked program and replace each NotImplementedError."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor, nn

LossFn = Callable[[Tensor, Tensor], Tensor]


class Finding(NamedTuple):
    """One problem ``diagnose`` found: a ``code`` (see ``diagnose``), ``where`` (a parameter
    name such as ``"head.weight"``, or ``"loss"``, ``"output"``, ``"optimizer"``) and a
    one-sentence ``detail`` with the evidence."""

    code: str
    where: str
    detail: str


class TransferNet(nn.Module):
    """A "pretrained" feature extractor and a linear head: [N, d_in] -> logits [N, n_classes]."""

    def __init__(self, d_in: int = 8, hidden: int = 32, n_classes: int = 4) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.features(x))  # (N, n_classes)


def make_task(
    n: int, seed: int, d_in: int = 8, n_classes: int = 4, shuffle_labels: bool = False
) -> tuple[Tensor, Tensor]:
    """A learnable classification batch: x [n, d_in] float32, y [n] int64 with
    y = argmax(x @ W) for a fixed random W. ``shuffle_labels`` permutes y (nothing to learn)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, n_classes, generator=g)
    y = (x @ w).argmax(dim=1)  # (n,)
    if shuffle_labels:
        y = y[torch.randperm(n, generator=g)]
    return x, y


def train_steps(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: tuple[Tensor, Tensor],
    steps: int,
) -> list[float]:
    """``steps`` full-batch steps (zero_grad, forward, backward, step); returns the loss of
    each step's prediction, measured before its update."""
    x, y = batch
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses


# ---------------------------------------------------------------- ch08.1 build_transfer_setup


def build_transfer_setup(model: TransferNet) -> tuple[TransferNet, torch.optim.Optimizer]:
    """Prepare a pretrained ``TransferNet`` for a new task: freeze ``model.features``, give
    it a fresh head of the same shape, and return ``(model, optimizer)`` where the optimizer
    is SGD (lr 0.1) over exactly the parameters that should train — the new head's."""
    for p in model.features.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # TODO(ch08.1, repair)
    model.head = nn.Linear(model.head.in_features, model.head.out_features)  # the new task's head
    return model, optimizer


# ---------------------------------------------------------------- ch08.2 diagnose

CODES = (
    "not_in_optimizer",  # a trainable parameter of the model that the optimizer does not hold
    "frozen",  # the optimizer holds a parameter that does not require grad
    "not_in_model",  # the optimizer holds a tensor that is not a parameter of the model
    "no_grad",  # a trainable parameter that backward never reaches (its .grad stays None)
    "nonfinite",  # a loss, gradient or parameter became inf or nan
    "not_moving",  # a parameter the optimizer holds, with a gradient, that the steps never changed
    "loss_constant",  # every step's loss is the same to 1e-6
    "probabilities_as_logits",  # outputs are rows of probabilities fed to a loss that wants logits
    "at_chance",  # the best loss never got below the label-frequency baseline
)


def diagnose(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: tuple[Tensor, Tensor],
    steps: int,
) -> list[Finding]:
    """Run ``steps`` full-batch training steps (zero_grad, forward, backward, step) on a deep
    copy of ``(model, optimizer)`` — the caller's objects are left untouched — and return a
    Finding for each problem; ``[]`` for a healthy setup. Codes:
    ``not_in_optimizer``, ``frozen`` (the optimizer holds a parameter that does not require
    grad), ``not_in_model`` (it holds a tensor the model does not own), ``no_grad``,
    ``nonfinite``, ``not_moving``, ``loss_constant`` (two or more losses, all finite and
    equal to within 1e-6), and for integer targets with [N, C] outputs, C >= 2:
    ``probabilities_as_logits`` (non-negative output rows summing to 1) and ``at_chance``
    (at least two distinct labels; the best loss stays above 0.9 x the entropy of the
    batch's label frequencies)."""
    raise NotImplementedError("ch08.2 diagnose — see course/ch08.md#diagnose")


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


def overfit_one_batch(model: nn.Module, batch: tuple[Tensor, Tensor], steps: int) -> list[float]:
    """Train ``model`` in place on one batch for ``steps`` full-batch steps of Adam (lr 1e-2),
    cross-entropy for integer targets and mean squared error for float targets; returns
    each step's loss, measured before its update. A healthy model drives it to ~0."""
    raise NotImplementedError("ch08.3 overfit_one_batch — see course/ch08.md#overfit-one-batch")
