"""``pairwise_sq_dists`` squares ``torch.cdist`` (named in the reading as accepted);
``batch_linear`` is an ``einsum``; ``trace_shapes`` names ops by their qualified name
(``torch.Tensor.sub``), flattens outputs with pytree and keeps each shape as ``torch.Size``
(a tuple of ints); ``first_divergence`` normalizes both lists and walks them with
``zip_longest``; ``is_view_of`` asks first whether both hand out one storage object, then
compares storage base addresses recomputed from each tensor's first element and offset."""

from itertools import zip_longest

import torch
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._pytree import tree_flatten


def pairwise_sq_dists(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between every row of ``x[N, D]`` and every row of
    ``y[M, D]``: returns ``[N, M]`` with ``out[i, j] = ||x[i] - y[j]||**2``."""
    return torch.cdist(x, y, p=2.0).square()


def batch_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s computation: ``x[B, I]``, weight ``W[O, I]`` (one row per output),
    bias ``b[O]``; returns ``[B, O]`` with ``out[k, o] = x[k] . W[o] + b[o]``."""
    return torch.einsum("bi,oi->bo", x, W) + b


class _QualifiedShapeLog(TorchFunctionMode):
    """Notes ``(qualified op name, output shape)`` for each tensor a torch call returns."""

    def __init__(self, sink: list) -> None:
        super().__init__()
        self.sink = sink

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs if kwargs is not None else {}))
        label = resolve_name(func) or getattr(func, "__qualname__", repr(func))
        label = label.removesuffix(".__get__")  # torch.Tensor.T.__get__ -> torch.Tensor.T
        leaves, _ = tree_flatten(result)
        self.sink.extend((label, leaf.shape) for leaf in leaves if isinstance(leaf, torch.Tensor))
        return result


def trace_shapes(fn: Callable, *args) -> list[tuple[str, tuple[int, ...]]]:
    """Run ``fn(*args)`` and return ``[(op_name, output_shape), ...]``, one entry per
    tensor produced by a torch function, Tensor method or operator, in call order
    (a ``torch.overrides.TorchFunctionMode`` sees every such call).

    If ``fn`` raises, the ops that completed before the error are returned and the
    exception is swallowed: the trace is the evidence of where things went wrong.
    """
    recorded: list[tuple[str, tuple[int, ...]]] = []
    try:
        with _QualifiedShapeLog(recorded):
            fn(*args)
    except Exception:  # noqa: BLE001 - the ops before the failure are the evidence
        return recorded
    return recorded


def _as_shape(item) -> tuple[int, ...]:
    """A shape as a plain tuple, whether given bare or as a ``(name, shape)`` pair."""
    if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
        item = item[1]
    return tuple(int(size) for size in item)


def first_divergence(trace: Sequence[tuple[str, Sequence[int]]], expected: Sequence) -> int | None:
    """Index of the first entry of ``trace`` whose shape differs from ``expected``.

    ``expected`` holds one shape per op (tuples, lists or torch.Size; ``(name, shape)``
    pairs are accepted too). If one list ends before the other, the index where the
    shorter one ends is returned; ``None`` when every shape agrees.
    """
    missing = object()
    got = [tuple(int(size) for size in shape) for _name, shape in trace]
    want = [_as_shape(item) for item in expected]
    for index, (seen, meant) in enumerate(zip_longest(got, want, fillvalue=missing)):
        if seen is missing or meant is missing or seen != meant:
            return index
    return None


def _storage_base(t: torch.Tensor) -> int:
    """Address where ``t``'s storage begins: its first element minus its offset."""
    if t.numel() == 0:  # an empty window has no first element (data_ptr() reads 0)
        return t.untyped_storage().data_ptr()
    return t.data_ptr() - t.storage_offset() * t.element_size()


def is_view_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are windows onto one storage, whether or not the windows
    overlap; False for copies, however equal. An empty tensor is a view only of tensors on
    its own storage (``e.t()`` of an empty ``e``), never of another empty tensor, although
    every storage without bytes reports address 0. Only reads: neither tensor changes."""
    storage_a, storage_b = a.untyped_storage(), b.untyped_storage()
    if storage_a is storage_b:  # views of one storage hand out one storage object
        return True
    if storage_a.nbytes() == 0 or storage_b.nbytes() == 0 or a.device.type == "meta":
        return False  # address 0 is shared by every storage without bytes (or memory, on
        # the meta device): proves nothing
    return a.device == b.device and _storage_base(a) == _storage_base(b)
