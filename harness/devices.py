"""A student's function run on another device than the CPU, on a machine that has only a CPU.

Tensors on the ``meta`` device stand for a GPU's: they have a device, a dtype and a shape
but no values. A function that ignores its inputs' device (a result preallocated with
``torch.zeros(n)`` and filled, a helper tensor made without ``device=x.device``) mixes a
CPU tensor with theirs, which a GPU refuses or silently brings back to the CPU. A
function that reads values (``.item()``, ``.tolist()``, ``if (x > 0).any():``), or uses an
op that has no meta version (nested tensors), is right on a GPU but cannot run on meta:
that is no verdict on its device handling, so it is reported apart, and a test treats it
as "cannot tell here".

    outcome, seen = on_meta(sh.pairwise_sq_dists, x_meta, y_meta)
    # "returned" + the result, "mixed" + the op that met a CPU tensor and a meta one,
    # "needs values" + the error, or "raised" + the error
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

NEEDS_VALUES = "needs values"
MIXED = "mixed"


class _DeviceWatch(TorchDispatchMode):
    """Notes the first op that takes both a CPU tensor holding more than one value and a
    meta tensor (a 0-d CPU tensor is a scalar a GPU op accepts too)."""

    def __init__(self) -> None:
        super().__init__()
        self.mixed: str | None = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.mixed is None:
            tensors = _compared(func, args, kwargs)
            kinds = {t.device.type for t in tensors if t.device.type == "meta" or t.dim() > 0}
            if func.overloadpacket.__name__ == "copy_" and tensors:
                kinds.add(tensors[0].device.type)  # a copy off the device, even of one value
            if {"meta", "cpu"} <= kinds:
                shapes = ", ".join(f"{t.device.type} {list(t.shape)}" for t in tensors)
                self.mixed = f"{func} was given tensors on two devices ({shapes})"
        return func(*args, **kwargs)


_INDEXING = {"index", "index_put", "index_put_", "_index_put_impl_"}
# ops whose tensor arguments after the first are sizes that live on the CPU by contract
# (pack_padded_sequence's lengths, tensor_split's indices)
_CPU_SIZES = {"_pack_padded_sequence", "_pad_packed_sequence", "tensor_split"}


def _compared(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors of an op that a GPU needs on one device: indices and sizes may stay on
    the CPU, and a copy from the CPU onto the device is how values get there."""
    packet = func.overloadpacket.__name__
    if packet in _INDEXING:
        args = (args[0], *args[2:])
    elif packet in _CPU_SIZES:
        return [args[0]] if isinstance(args[0], torch.Tensor) else []
    elif packet == "copy_" and isinstance(args[0], torch.Tensor) and args[0].is_meta:
        return []
    return [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]


def on_meta(call, *args, **kwargs) -> tuple[str, object]:
    """``call(*args, **kwargs)`` watched (see module doc): ("returned", its result), or
    ("mixed", the op that met a CPU tensor and a meta one), or ("needs values", the error
    of an op that reads values), or ("raised", the error's type and text). A stub's
    NotImplementedError and a broken invariant propagate: they are their own reports."""
    watch = _DeviceWatch()
    try:
        with watch:
            out = call(*args, **kwargs)
    except AssertionError:
        raise  # a broken invariant is the harness's report, not an observation
    except Exception as exc:  # noqa: BLE001 - what was raised is the observation
        text = f"{type(exc).__name__}: {str(exc)[:200]}"
        if watch.mixed:
            return MIXED, watch.mixed
        if _reads_values(exc):
            return NEEDS_VALUES, text
        if isinstance(exc, NotImplementedError):
            raise  # a stub's task left to do: its own report
        return "raised", text
    if watch.mixed:
        return MIXED, watch.mixed
    return "returned", out


def described_on_meta(call, *args, **kwargs) -> dict:
    """``on_meta`` as a probe returns it, in plain data: {"cannot tell": the error} where the
    call reads values, {"raised": what happened} where it raised or mixed devices, else its
    tensor result's {"device", "dtype", "shape"} (device and dtype as text)."""
    outcome, out = on_meta(call, *args, **kwargs)
    if outcome == NEEDS_VALUES:
        return {"cannot tell": out}  # right on a GPU, impossible on meta: no verdict
    if outcome != "returned":
        return {"raised": out if outcome == "raised" else f"mixed devices: {out}"}
    if not isinstance(out, torch.Tensor):
        return {"raised": f"returned {type(out).__name__}"}
    return {"device": str(out.device), "dtype": str(out.dtype), "shape": tuple(out.shape)}


def _reads_values(exc: Exception) -> bool:
    """Whether ``exc`` says the op needs values, or has no meta kernel at all (nested
    tensors, some sparse ops): either way the call may be right on a GPU."""
    text = str(exc)
    return any(
        words in text
        for words in (
            "Cannot copy out of meta tensor",
            "cannot be called on meta tensors",
            "_local_scalar_dense",
            "meta tensor; no data",
            "storage_device.is_cpu()",  # nested tensors: their storage must hold values
            "with arguments from the 'Meta' backend",  # an op with no meta kernel
            "no fake impl or Meta kernel registered",  # one whose result size needs values
        )
    )
