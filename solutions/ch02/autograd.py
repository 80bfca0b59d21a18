"""ch02 — Autograd and gradient debugging: which parameters can the loss reach, where
was the graph cut, and how to accumulate a gradient honestly. Reference solution."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

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
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    reached: set[int] = set()  # ids of the leaf tensors the graph accumulates into
    if loss.grad_fn is None:
        if loss.requires_grad:
            reached.add(id(loss))  # the loss is itself a leaf parameter
    else:
        seen: set[Any] = set()
        stack = [loss.grad_fn]
        while stack:  # an explicit stack: real graphs are far deeper than Python's recursion limit
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            leaf = getattr(node, "variable", None)  # AccumulateGrad nodes hold their leaf
            if leaf is not None:
                reached.add(id(leaf))
            stack.extend(nxt for nxt, _ in node.next_functions)
    return {name: id(p) in reached for name, p in pairs}


# ---------------------------------------------------------------- ch02.2 find_graph_cuts

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep  # not torchvision/
_THIS_FILE = os.path.abspath(__file__)


def _op_name(func: Any) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    if name in ("__get__", "__set__"):  # attribute access such as .data
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _carries_values(obj: Any) -> bool:
    """Does ``obj`` hold real numbers that a gradient could have flowed through?"""
    if isinstance(obj, Tensor):
        return obj.is_floating_point() or obj.is_complex()
    if isinstance(obj, float):
        return True
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind in "fc"
    if isinstance(obj, (list, tuple)):
        return any(_carries_values(o) for o in obj)
    return False


def _shape_only(name: str) -> bool:
    """Constructors that read only an input's shape/dtype, and reading ``.grad``."""
    return name.endswith("_like") or name.startswith("new_") or name in ("grad", "_grad")


def _user_location() -> str:
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_TORCH_DIR) and path != _THIS_FILE:
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"


class _CutRecorder(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.cuts: list[Cut] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs, _ = tree_flatten((args, kwargs))
        # Asked before the call: an in-place op (detach_, requires_grad_(False)) changes its
        # input, which then no longer requires grad, though it did when the op took it.
        took_grad = any(isinstance(t, Tensor) and t.requires_grad for t in inputs)
        out = func(*args, **kwargs)
        if took_grad:
            name = _op_name(func)
            outputs = out if isinstance(out, (list, tuple)) else [out]
            keeps_path = any(isinstance(o, Tensor) and o.requires_grad for o in outputs)
            if not keeps_path and _carries_values(out) and not _shape_only(name):
                self.cuts.append(Cut(name, _user_location()))
        return out


def find_graph_cuts(fn: Callable[..., Any], *args: Any) -> list[Cut]:
    """Run ``fn(*args)`` and return, in order, every torch operation that took an input
    requiring grad and produced real numbers that do not (detach, ``.data``, an op under
    ``no_grad``, ``.item()``/``.tolist()``/``float()``, ``torch.tensor(t)``). Integer and
    bool results, shape-only constructors (``zeros_like``, ``new_*``) and ``.grad`` reads
    are not cuts."""
    recorder = _CutRecorder()
    with recorder:
        fn(*args)
    return recorder.cuts


# ---------------------------------------------------------------- ch02.3 two_stage_train


def first_stage(w1: Tensor, x: Tensor, log: list[Tensor]) -> Tensor:
    """The first stage of the two-stage model, ``w1 * x`` (same shape as ``x``). Appends a
    copy of its output to ``log`` for later inspection and returns the output itself."""
    features = w1 * x  # (N,)
    log.append(features.detach())  # the copy for the log leaves the graph; the output does not
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
    inputs, targets = batch
    n = len(inputs)
    model.zero_grad(set_to_none=True)  # stale gradients from earlier backward calls
    for x_part, y_part in zip(
        torch.tensor_split(inputs, n_micro), torch.tensor_split(targets, n_micro)
    ):
        if len(x_part) == 0:
            continue
        share = len(x_part) / n  # this micro-batch's weight in the full-batch mean
        (loss_fn(model(x_part), y_part) * share).backward()
    return {
        name: (p.grad.clone() if p.grad is not None else torch.zeros_like(p))
        for name, p in model.named_parameters()
        if p.requires_grad
    }
