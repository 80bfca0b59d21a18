"""ch03 — A neural network without nn.Module: a two-layer MLP from bare tensors,
trained on XOR quadrants by hand. Read course/ch03.md, then replace each
NotImplementedError and repair mlp_forward."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch import Tensor

Params = dict[str, Tensor]


class XorData(NamedTuple):
    """Train/validation split: X_* float32 (N, 2), y_* int64 (N,) class labels 0/1."""

    X_train: Tensor
    y_train: Tensor
    X_val: Tensor
    y_val: Tensor


class StepRow(NamedTuple):
    """One tensor's health after one step (see ``step_report``)."""

    name: str
    is_leaf: bool
    grad_is_none: bool
    grad_norm: float
    finite: bool
    moved: float


class History(NamedTuple):
    """``train_loss[k]``: loss computed in step k (before its update);
    ``val_acc[k]``: validation accuracy after update k; ``params``: the trained tensors."""

    params: Params
    train_loss: list[float]
    val_acc: list[float]


def make_xor_data(n: int, seed: int) -> XorData:
    """n points ~ N(0, I) in 2-D labelled (x0 > 0) xor (x1 > 0), split 80/20 at random.

    From a ``torch.Generator`` seeded with ``seed``: X = randn(n, 2), then perm = randperm(n);
    the first int(0.8 * n) indices of perm are the training set, the rest validation, each
    in perm's order (X[perm[:k]]).
    """
    raise NotImplementedError("ch03.1 make_xor_data — see course/ch03.md#data-xor-quadrants")


def init_mlp(d_in: int, hidden: int, n_classes: int, generator: torch.Generator) -> Params:
    """Leaf tensors that require grad: W1 (d_in, hidden), b1 (hidden,), W2 (hidden, n_classes),
    b2 (n_classes,). W = randn(fan_in, fan_out) / sqrt(fan_in), drawn W1 then W2 from
    ``generator``; biases start at zero."""
    raise NotImplementedError("ch03.2 init_mlp — see course/ch03.md#parameters-as-plain-tensors")


def mlp_forward(params: Params, X: Tensor) -> Tensor:
    """Logits (N, n_classes) of relu(X @ W1 + b1) @ W2 + b2 for X of shape (N, d_in)."""
    h = X @ params["W1"] + params["b1"]  # TODO(ch03.3, repair)
    return h @ params["W2"] + params["b2"]  # (N, n_classes)


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean over the batch of -log softmax(logits)[i, targets[i]], as a 0-d tensor.

    logits (N, C) float, targets (N,) int64. Written by hand and numerically stable:
    logits of +-1000 give a finite loss equal to ``F.cross_entropy``.
    """
    raise NotImplementedError("ch03.4 cross_entropy — see course/ch03.md#cross-entropy-by-hand")


def sgd_step(params: Params, lr: float) -> None:
    """In place, without recording the update: p -= lr * p.grad for every tensor whose grad
    is not None. The tensors stay the same leaf objects and their .grad is left as it is."""
    raise NotImplementedError("ch03.5 sgd_step — see course/ch03.md#one-update")


def step_report(before: Params, params: Params) -> list[StepRow]:
    """One ``StepRow`` per entry of ``params`` (same order), after backward and one update.

    ``before`` holds copies of the tensors taken before the update. grad_norm is the L2 norm
    of .grad (0.0 when it is None); finite: the tensor and its grad hold no inf/nan;
    moved: the largest absolute change of any single entry since ``before``.
    """
    raise NotImplementedError("ch03.6 step_report — see course/ch03.md#is-one-step-healthy")


def accuracy(
    params: Params, X: Tensor, y: Tensor, forward: Callable[[Params, Tensor], Tensor] | None = None
) -> float:
    """Fraction of rows of X whose largest logit is at the label in y (``forward``
    defaults to ``mlp_forward``)."""
    forward = forward or mlp_forward
    with torch.no_grad():
        return (forward(params, X).argmax(dim=1) == y).float().mean().item()


def train_mlp(
    data: XorData,
    hidden: int = 16,
    lr: float = 0.5,
    steps: int = 500,
    seed: int = 1,
    forward: Callable[[Params, Tensor], Tensor] | None = None,
) -> History:
    """Full-batch gradient descent on ``cross_entropy(forward(params, X_train), y_train)``.

    ``forward`` defaults to ``mlp_forward``. Parameters come from ``init_mlp(d_in, hidden,
    n_classes, Generator().manual_seed(seed))``; every step clears the gradients,
    backpropagates, and calls ``sgd_step``. Returns a ``History``.
    """
    raise NotImplementedError("ch03.7 train_mlp — see course/ch03.md#training")
