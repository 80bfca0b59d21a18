"""ch01 — Tensor shapes and shape debugging. A shape bug rarely raises where it starts:
broadcasting and square sizes let the wrong tensor flow on. Read course/ch01.md, then
replace each NotImplementedError and repair the program marked TODO(ch01.7, repair)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasting ``a`` with ``b`` produces, as a tuple of ints.

    Shapes are aligned from the right; two sizes agree when equal or when one is 1.
    Raises ``ValueError`` naming the dimension (and both sizes) where they disagree.
    """
    raise NotImplementedError("ch01.1 broadcast_shape — see course/ch01.md#the-broadcasting-rule")


def pairwise_sq_dists(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between every row of ``x[N, D]`` and every row of
    ``y[M, D]``: returns ``[N, M]`` with ``out[i, j] = ||x[i] - y[j]||**2``."""
    raise NotImplementedError(
        "ch01.2 pairwise_sq_dists — see course/ch01.md#every-row-against-every-row"
    )


def batch_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s computation: ``x[B, I]``, weight ``W[O, I]`` (one row per output),
    bias ``b[O]``; returns ``[B, O]`` with ``out[k, o] = x[k] . W[o] + b[o]``."""
    raise NotImplementedError("ch01.3 batch_linear — see course/ch01.md#the-weight-convention")


def trace_shapes(fn: Callable, *args) -> list[tuple[str, tuple[int, ...]]]:
    """Run ``fn(*args)`` and return ``[(op_name, output_shape), ...]``, one entry per
    tensor produced by a torch function, Tensor method or operator, in call order
    (a ``torch.overrides.TorchFunctionMode`` sees every such call).

    If ``fn`` raises, the ops that completed before the error are returned and the
    exception is swallowed: the trace is the evidence of where things went wrong.
    """
    raise NotImplementedError("ch01.4 trace_shapes — see course/ch01.md#tracing-shapes")


def first_divergence(trace: Sequence[tuple[str, Sequence[int]]], expected: Sequence) -> int | None:
    """Index of the first entry of ``trace`` whose shape differs from ``expected``.

    ``expected`` holds one shape per op (tuples, lists or torch.Size; ``(name, shape)``
    pairs are accepted too). If one list ends before the other, the index where the
    shorter one ends is returned; ``None`` when every shape agrees.
    """
    raise NotImplementedError("ch01.5 first_divergence — see course/ch01.md#the-first-divergence")


def is_view_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are windows onto one storage, whether or not the windows
    overlap; False for copies, however equal. An empty tensor is a view only of tensors on
    its own storage (``e.t()`` of an empty ``e``), never of another empty tensor, although
    every storage without bytes reports address 0. Only reads: neither tensor changes."""
    raise NotImplementedError("ch01.6 is_view_of — see course/ch01.md#views-and-strides")


def standardize_channels_(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Standardize each channel of ``x[B, C, H, W]`` in place to mean 0 and variance 1
    (biased variance over B, H, W, as BatchNorm in training mode); returns ``x`` itself."""
    B, C, H, W = x.shape
    flat = x.transpose(0, 1).view(C, B * H * W)  # TODO(ch01.7, repair)  (C, B*H*W)
    mean = flat.mean(dim=1, keepdim=True)  # (C, 1)
    var = flat.var(dim=1, unbiased=False, keepdim=True)  # (C, 1)
    flat.sub_(mean).div_(torch.sqrt(var + eps))  # meant to write through flat into x
    return x
