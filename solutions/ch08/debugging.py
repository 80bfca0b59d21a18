"""ch08 — A model that refuses to learn: a transfer setup whose optimizer trains nothing,
a diagnostic that names why a run is stuck, and the one-batch overfitting check.
Reference solution."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
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
    old = model.head.weight
    model.head = nn.Linear(model.head.in_features, model.head.out_features)  # the new task's head
    model.head.to(dtype=old.dtype, device=old.device)  # where the old head was, as it was
    trainable = [p for p in model.parameters() if p.requires_grad]  # built after the swap
    optimizer = torch.optim.SGD(trainable, lr=0.1)
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


def _label_entropy(y: Tensor) -> float:
    p = torch.bincount(y.flatten()).float()
    p = p[p > 0] / p.sum()
    return float(-(p * p.log()).sum())


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
    model, optimizer = copy.deepcopy((model, optimizer))  # one memo: the copies share tensors
    named = dict(model.named_parameters())
    name_of = {id(p): n for n, p in named.items()}
    held = [p for group in optimizer.param_groups for p in group["params"]]
    held_ids = {id(p) for p in held}
    findings: list[Finding] = []

    for n, p in named.items():
        if p.requires_grad and id(p) not in held_ids:
            findings.append(
                Finding("not_in_optimizer", n, "trainable, but the optimizer does not hold it")
            )
        if not p.requires_grad and id(p) in held_ids:
            findings.append(
                Finding("frozen", n, "the optimizer holds it, but it does not require grad")
            )
    foreign = [p for p in held if id(p) not in name_of]
    if foreign:
        findings.append(
            Finding(
                "not_in_model",
                "optimizer",
                f"the optimizer holds {len(foreign)} tensor(s) the model does not own "
                "(a layer replaced after the optimizer was built?)",
            )
        )

    x, y = batch
    before = {n: p.detach().clone() for n, p in named.items()}
    losses: list[float] = []
    got_grad: set[str] = set()
    nonzero_grad: set[str] = set()
    nonfinite: dict[str, str] = {}
    outputs = None
    for _ in range(steps):
        optimizer.zero_grad()
        out = model(x)
        if outputs is None:
            outputs = out.detach()
        loss = loss_fn(out, y)
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            nonfinite.setdefault("loss", f"the loss became {losses[-1]} at step {len(losses) - 1}")
        if loss.requires_grad:  # with everything frozen there is nothing to backpropagate
            loss.backward()
        for n, p in named.items():
            if p.grad is not None:
                got_grad.add(n)
                if not torch.isfinite(p.grad).all():
                    nonfinite.setdefault(
                        n, f"its gradient became non-finite at step {len(losses) - 1}"
                    )
                elif p.grad.abs().sum() > 0:
                    nonzero_grad.add(n)
        optimizer.step()
    for n, p in named.items():
        if not torch.isfinite(p.detach()).all():
            nonfinite.setdefault(n, "its values became non-finite")

    if steps > 0:
        for n, p in named.items():
            if p.requires_grad and n not in got_grad:
                findings.append(
                    Finding("no_grad", n, "backward never reached it: .grad stayed None")
                )
        findings += [Finding("nonfinite", w, d) for w, d in nonfinite.items()]
        for n, p in named.items():
            if n in got_grad and id(p) in held_ids and torch.equal(p.detach(), before[n]):
                why = (
                    "it had a nonzero gradient but never changed: lr 0, or gradients cleared "
                    "before the step?"
                    if n in nonzero_grad
                    else "its gradient was exactly zero on every step"
                )
                findings.append(Finding("not_moving", n, why))
    if len(losses) >= 2 and all(math.isfinite(v) for v in losses):
        if max(losses) - min(losses) <= 1e-6:
            findings.append(
                Finding("loss_constant", "loss", f"all {len(losses)} losses equal {losses[0]:.6f}")
            )

    classification = (
        outputs is not None
        and not y.is_floating_point()
        and outputs.dim() == 2
        and outputs.shape[1] >= 2
    )
    if classification:
        rows = outputs.sum(dim=1)
        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):
            findings.append(
                Finding(
                    "probabilities_as_logits",
                    "output",
                    "the model's outputs are probabilities (rows sum to 1) but the loss expects "
                    "logits: cross_entropy applies log_softmax itself",
                )
            )
        chance = _label_entropy(y)
        finite = [v for v in losses if math.isfinite(v)]
        if finite and chance > 0 and min(finite) > 0.9 * chance:
            findings.append(
                Finding(
                    "at_chance",
                    "loss",
                    f"the best loss {min(finite):.4f} never went below the label-frequency "
                    f"baseline {chance:.4f} (shuffled labels, or nothing learnable?)",
                )
            )
    return findings


# ---------------------------------------------------------------- ch08.3 overfit_one_batch


def overfit_one_batch(model: nn.Module, batch: tuple[Tensor, Tensor], steps: int) -> list[float]:
    """Train ``model`` in place on one batch for ``steps`` full-batch steps of Adam (lr 1e-2),
    cross-entropy for integer targets and mean squared error for float targets; returns
    each step's loss, measured before its update. A healthy model drives it to ~0."""
    x, y = batch
    if not y.is_floating_point():
        y = y.long()  # cross_entropy takes int64 class indices; int32, int16, int8 are integers too
    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    return train_steps(model, optimizer, loss_fn, (x, y), steps)
