"""ch01 — Tensor shapes and shape debugging. A shape bug rarely raises where it starts:
broadcasting and square sizes let the wrong tensor flow on. Reference solution."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.overrides import TorchFunctionMode


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasting ``a`` with ``b`` produces, as a tuple of ints.

    Shapes are aligned from the right; two sizes agree when equal or when one is 1.
    Raises ``ValueError`` naming the dimension (and both sizes) where they disagree.
    """
    a, b = tuple(int(s) for s in a), tuple(int(s) for s in b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a  # left-pad with 1s: dimensions line up from the right
    b = (1,) * (n - len(b)) + b
    out = []
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa == sb or sb == 1:
            out.append(sa)  # also covers sa == 0 against sb == 1: a size-1 dim stretches to 0
        elif sa == 1:
            out.append(sb)
        else:
            raise ValueError(
                f"cannot broadcast: dimension {i - n} (counted from the right) has size {sa} "
                f"in one shape and {sb} in the other; sizes must be equal or 1"
            )
    return tuple(out)


def pairwise_sq_dists(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between every row of ``x[N, D]`` and every row of
    ``y[M, D]``: returns ``[N, M]`` with ``out[i, j] = ||x[i] - y[j]||**2``."""
    diff = x[:, None, :] - y[None, :, :]  # (N, 1, D) - (1, M, D) -> (N, M, D)
    return (diff**2).sum(dim=-1)  # (N, M)


def batch_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s computation: ``x[B, I]``, weight ``W[O, I]`` (one row per output),
    bias ``b[O]``; returns ``[B, O]`` with ``out[k, o] = x[k] . W[o] + b[o]``."""
    return x @ W.T + b  # (B, I) @ (I, O) -> (B, O); b (O,) broadcasts over rows


class _ShapeRecorder(TorchFunctionMode):
    """Sees every call into torch's Python API while active and notes output shapes."""

    def __init__(self) -> None:
        super().__init__()
        self.trace: list[tuple[str, tuple[int, ...]]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))  # the mode is switched off while it runs
        name = getattr(func, "__name__", str(func))
        if name == "__get__":  # a property such as x.T or x.mT
            name = getattr(func.__self__, "__name__", name)
        for o in _tensors_in(out):
            self.trace.append((name, tuple(o.shape)))
        return out


def _tensors_in(out):
    """The tensors in an op's result, in order, however deep its tuples and lists nest
    (``histogramdd`` returns a histogram and a list of bin edges)."""
    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for o in out:
            yield from _tensors_in(o)


def trace_shapes(fn: Callable, *args) -> list[tuple[str, tuple[int, ...]]]:
    """Run ``fn(*args)`` and return ``[(op_name, output_shape), ...]``, one entry per
    tensor produced by a torch function, Tensor method or operator, in call order
    (a ``torch.overrides.TorchFunctionMode`` sees every such call).

    If ``fn`` raises, the ops that completed before the error are returned and the
    exception is swallowed: the trace is the evidence of where things went wrong.
    """
    recorder = _ShapeRecorder()
    try:
        with recorder:
            fn(*args)
    except Exception:  # noqa: BLE001 - a crashing program is exactly what we want to trace
        pass
    return recorder.trace


def first_divergence(trace: Sequence[tuple[str, Sequence[int]]], expected: Sequence) -> int | None:
    """Index of the first entry of ``trace`` whose shape differs from ``expected``.

    ``expected`` holds one shape per op (tuples, lists or torch.Size; ``(name, shape)``
    pairs are accepted too). If one list ends before the other, the index where the
    shorter one ends is returned; ``None`` when every shape agrees.
    """
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if isinstance(want, (tuple, list)) and len(want) == 2 and isinstance(want[0], str):
            want = want[1]  # a (name, shape) pair
        if tuple(entry[1]) != tuple(want):
            return i
    if len(trace) != len(expected):
        return min(len(trace), len(expected))  # an op is missing or an extra one ran
    return None


def is_view_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are windows onto one storage, whether or not the windows
    overlap; False for copies, however equal. An empty tensor is a view only of tensors on
    its own storage (``e.t()`` of an empty ``e``), never of another empty tensor, although
    every storage without bytes reports address 0. Only reads: neither tensor changes."""
    sa, sb = a.untyped_storage(), b.untyped_storage()
    if not sa.nbytes() or a.is_meta:
        # No bytes, or no memory behind them (meta), so no address to tell storages apart
        # (all report 0): only the storage object itself counts, and every view of a
        # storage hands out that same object.
        return sa is sb
    return a.device == b.device and sa.data_ptr() == sb.data_ptr()


def standardize_channels_(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Standardize each channel of ``x[B, C, H, W]`` in place to mean 0 and variance 1
    (biased variance over B, H, W, as BatchNorm in training mode); returns ``x`` itself."""
    mean = x.mean(dim=(0, 2, 3), keepdim=True)  # (1, C, 1, 1)
    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)  # (1, C, 1, 1)
    x.sub_(mean).div_(torch.sqrt(var + eps))  # broadcasting writes straight into x
    return x
