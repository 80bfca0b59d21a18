"""ch02 — Autograd and gradient debugging: which parameters can the loss reach, where
was the graph cut, and how to accumulate a gradient honestly. Read course/ch02.md, then
replace each NotImplementedError and repair the marked program."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

# The chapter's data: y = 3x, so any pair with w1 * w2 == 3 fits it perfectly.
X = torch.tensor([1.0, 2.0, 3.0, 4.0])
TARGET = 3.0 * X
W1_START, W2_START = 0.5, 1.0


class TwoStageResult(NamedTuple):
    """A two-stage run. ``w1s[k], w2s[k]`` made prediction k, scored by ``losses[k]``;
    ``w1s[-1], w2s[-1]`` are the values after the last update (steps + 1 entries each).
    ``features[k]`` is the logged first-stage output of step k (a copy outside the graph)."""

    w1: float
    w2: float
    losses: list[float]
    w1s: list[float]
    w2s: list[float]
    features: list[Tensor]


class Cut(NamedTuple):
    """One place where the gradient path stopped: the torch operation's name (e.g.
    ``"detach"``, ``"data"``, ``"item"``, ``"mul"``) and ``"path/to/file.py:LINE"`` of the
    user code that called it."""

    op: str
    location: str


# ---------------------------------------------------------------- ch02.1 reachable_params


def reachable_params(
    loss: Tensor, named_params: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]
) -> dict[str, bool]:
    """{name: True if a gradient path leads from ``loss`` back to that parameter}, in the
    order given, found by walking ``loss.grad_fn.next_functions``: no backward pass runs,
    no ``.grad`` is touched and the graph stays usable. Parameters are matched by identity."""
    raise NotImplementedError("ch02.1 reachable_params — see course/ch02.md#reachable-parameters")


# ---------------------------------------------------------------- ch02.2 find_graph_cuts


def find_graph_cuts(fn: Callable[..., Any], *args: Any) -> list[Cut]:
    """Run ``fn(*args)`` and return, in order, every torch operation that took an input
    requiring grad and produced real numbers that do not (detach, ``.data``, an op under
    ``no_grad``, ``.item()``/``.tolist()``/``float()``, ``torch.tensor(t)``). Integer and
    bool results, shape-only constructors (``zeros_like``, ``new_*``) and ``.grad`` reads
    are not cuts."""
    raise NotImplementedError("ch02.2 find_graph_cuts — see course/ch02.md#finding-the-cut")


# ---------------------------------------------------------------- ch02.3 two_stage_train


def first_stage(w1: Tensor, x: Tensor, log: list[Tensor]) -> Tensor:
    """The first stage of the two-stage model, ``w1 * x`` (same shape as ``x``). Appends a
    copy of its output to ``log`` for later inspection and returns the output itself."""
    features = (w1 * x).detach()  # TODO(ch02.3, repair): "safe" for the log — and for w1?
    log.append(features)
    return features


def run_two_stage(
    stage: Callable[[Tensor, Tensor, list[Tensor]], Tensor], steps: int, lr: float
) -> TwoStageResult:
    """The chapter's training loop with a given first stage: prediction ``w2 * stage(w1, X)``,
    mean squared error against ``TARGET``, plain SGD on every parameter whose grad is not
    None. Starts from w1 = 0.5, w2 = 1.0."""
    w1 = torch.tensor(W1_START, requires_grad=True)
    w2 = torch.tensor(W2_START, requires_grad=True)
    log: list[Tensor] = []
    losses, w1s, w2s = [], [w1.item()], [w2.item()]
    for _ in range(steps):
        prediction = w2 * stage(w1, X, log)  # (N,)
        loss = ((prediction - TARGET) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (w1, w2):
                if p.grad is not None:  # a parameter the loss never reached is left alone
                    p -= lr * p.grad
                    p.grad = None
        w1s.append(w1.item())
        w2s.append(w2.item())
    return TwoStageResult(w1.item(), w2.item(), losses, w1s, w2s, log)


def two_stage_train(steps: int, lr: float) -> TwoStageResult:
    """Train the two-stage model ``w2 * first_stage(w1, X)`` for ``steps`` steps of SGD with
    learning rate ``lr``; both w1 and w2 must learn, so w1 * w2 approaches 3."""
    return run_two_stage(first_stage, steps, lr)


# ---------------------------------------------------------------- ch02.4 accumulated_grad


def accumulated_grad(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    batch: tuple[Tensor, Tensor],
    n_micro: int,
) -> dict[str, Tensor]:
    """Accumulate the gradient of ``loss_fn(model(inputs), targets)`` (a mean over the
    batch) over ``n_micro`` micro-batches (``torch.tensor_split`` of the batch, sizes may
    differ by one) so that it equals the full-batch gradient, whatever ``.grad`` held
    before. Leaves it in each parameter's ``.grad`` and returns {name: copy of it}; takes
    no step (parameter values stay as they were) and does not change the batch."""
    raise NotImplementedError("ch02.4 accumulated_grad — see course/ch02.md#gradient-accumulation")
