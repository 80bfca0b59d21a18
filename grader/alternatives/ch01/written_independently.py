"""A whole module written from the stub, the public tests and the reading alone, without
sight of the reference (to calibrate the similarity report, ``tests/test_similarity.py``):
every definition the student writes, in its own way (the given ones stay the solution's).
It passed every public and hidden test when it was written, and must keep passing them."""

from collections.abc import Callable, Sequence

import torch


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasting ``a`` with ``b`` produces, as a tuple of ints.

    Shapes are aligned from the right; two sizes agree when equal or when one is 1.
    Raises ``ValueError`` naming the dimension (and both sizes) where they disagree.
    """
    left = [int(s) for s in a]
    right = [int(s) for s in b]
    ndim = max(len(left), len(right))
    # pad the shorter shape with leading ones so both have ndim entries
    left = [1] * (ndim - len(left)) + left
    right = [1] * (ndim - len(right)) + right

    result = []
    for pos, (p, q) in enumerate(zip(left, right)):
        if p == q or q == 1:
            result.append(p)
        elif p == 1:
            result.append(q)
        else:
            from_right = pos - ndim  # negative index, counted from the last dim
            raise ValueError(
                f"shapes {tuple(a)} and {tuple(b)} do not broadcast: dimension {from_right} "
                f"has sizes {p} and {q} (neither equal nor 1)"
            )
    return tuple(result)


def pairwise_sq_dists(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between every row of ``x[N, D]`` and every row of
    ``y[M, D]``: returns ``[N, M]`` with ``out[i, j] = ||x[i] - y[j]||**2``."""
    diff = x.unsqueeze(1) - y.unsqueeze(0)  # (N, 1, D) - (1, M, D) -> (N, M, D)
    return (diff * diff).sum(dim=2)


def batch_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s computation: ``x[B, I]``, weight ``W[O, I]`` (one row per output),
    bias ``b[O]``; returns ``[B, O]`` with ``out[k, o] = x[k] . W[o] + b[o]``."""
    # W is stored [out, in]; contract x's feature axis with W's input axis
    return torch.matmul(x, W.transpose(0, 1)) + b.unsqueeze(0)


class _ShapeRecorder(torch.overrides.TorchFunctionMode):
    """Collects (name, shape) for each tensor returned by an intercepted torch call."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, tuple[int, ...]]] = []

    def _note(self, name: str, value) -> None:
        if isinstance(value, torch.Tensor):
            self.log.append((name, tuple(int(s) for s in value.shape)))
        elif isinstance(value, (tuple, list)):
            for item in value:  # nested ones too: histogramdd returns a list of bin edges
                self._note(name, item)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._note(getattr(func, "__name__", None) or str(func), out)
        return out


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
    except Exception:  # noqa: BLE001 - the partial trace is what we want
        pass
    return list(recorder.log)


def _as_shape(entry) -> tuple:
    """Normalise an expected entry (shape, or (name, shape) pair) into a tuple."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str):
        entry = entry[1]
    return tuple(int(s) for s in entry)


def first_divergence(trace: Sequence[tuple[str, Sequence[int]]], expected: Sequence) -> int | None:
    """Index of the first entry of ``trace`` whose shape differs from ``expected``.

    ``expected`` holds one shape per op (tuples, lists or torch.Size; ``(name, shape)``
    pairs are accepted too). If one list ends before the other, the index where the
    shorter one ends is returned; ``None`` when every shape agrees.
    """
    got = [_as_shape(item) for item in trace]
    want = [_as_shape(item) for item in expected]
    common = min(len(got), len(want))
    for idx in range(common):
        if got[idx] != want[idx]:
            return idx
    if len(got) != len(want):
        return common
    return None


def is_view_of(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when ``a`` and ``b`` are windows onto one storage, whether or not the windows
    overlap; False for copies, however equal. An empty tensor is a view only of tensors on
    its own storage (``e.t()`` of an empty ``e``), never of another empty tensor, although
    every storage without bytes reports address 0. Only reads: neither tensor changes."""
    sa = a.untyped_storage()
    sb = b.untyped_storage()
    if sa.device != sb.device:
        return False
    if sa.nbytes() > 0 and sb.nbytes() > 0 and sa.device.type != "meta":
        # real memory: the same block means the same base address (meta has none)
        return sa.data_ptr() == sb.data_ptr()
    # at least one storage has no bytes: addresses are meaningless, compare the
    # underlying storage objects themselves
    return sa._cdata == sb._cdata


def standardize_channels_(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Standardize each channel of ``x[B, C, H, W]`` in place to mean 0 and variance 1
    (biased variance over B, H, W, as BatchNorm in training mode); returns ``x`` itself."""
    reduce_over = (0, 2, 3)
    # statistics may be fresh tensors; the writes must land in x's own memory
    mu = x.mean(dim=reduce_over, keepdim=True)  # (1, C, 1, 1)
    var = x.var(dim=reduce_over, unbiased=False, keepdim=True)  # (1, C, 1, 1)
    inv_std = (var + eps).rsqrt()
    x.sub_(mu).mul_(inv_std)
    return x
