"""The same values in other memory layouts, for probes that sweep a function's input domain.

A tensor that arrives in a probe (through ``harness.wire``) is contiguous; a student's
function meets other layouts in real code: a transposed matrix, a window of a bigger
tensor, a slice that starts inside its storage, an image stored channels-last. A probe
rebuilds its inputs with ``laid_out(t, layout)`` — same shape, dtype and values — and the
test compares the result with the contiguous answer::

    @probe
    def dists_in(layout, x, y):
        return sh.pairwise_sq_dists(laid_out(x, layout), laid_out(y, layout))
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch
from torch.utils._pytree import tree_flatten

from harness.ownership import IMMUTABLE

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "channels_last")


def laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t``'s values in ``layout``: "transposed" (the last two dims' strides swapped),
    "strided" (every other element of a twice-as-wide buffer), "offset" (starting three
    elements into its storage), "channels_last" (4-D only) or "contiguous". A layout a
    tensor cannot take (too few dims, no elements) gives a contiguous copy."""
    t = t.detach()
    if layout == "transposed" and t.dim() >= 2:
        return t.mT.contiguous().mT
    if layout == "strided" and t.dim() >= 1 and t.numel():
        base = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
        base[..., ::2] = t
        return base[..., ::2]
    if layout == "offset" and t.numel():
        base = torch.zeros(t.numel() + 3, dtype=t.dtype, device=t.device)
        base[3:] = t.reshape(-1)
        return base[3:].view(t.shape)
    if layout == "channels_last" and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if layout not in LAYOUTS:
        raise ValueError(f"course bug: no layout {layout!r} (one of {LAYOUTS})")
    return t.clone()


# ---- the layout invariant: the same values in another layout give the same result ------------

_SEEN_AS = {
    "channels_last": "stored channels-last (as x.contiguous(memory_format=torch.channels_last) is)",
    "transposed": "stored transposed (as x.mT.contiguous().mT is)",
    "strided": "as every other element of a wider tensor (as base[..., ::2] is)",
    "offset": "as a window starting three elements into a bigger tensor (as base[3:] is)",
}


class Reseeded:
    """A generator argument as it was before the call: each re-call gets a fresh generator
    in that state (``fresh``), so it draws what the first call drew."""

    __slots__ = ("device", "state")

    def __init__(self, generator: torch.Generator) -> None:
        self.state, self.device = generator.get_state(), generator.device

    def generator(self) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.set_state(self.state)
        return g


def reseeded(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` with each generator argument taken as it is now (``Reseeded``)."""

    def keep(x):
        return Reseeded(x) if isinstance(x, torch.Generator) else x

    return tuple(map(keep, args)), {k: keep(v) for k, v in kwargs.items()}


def fresh(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` with a fresh generator for each ``Reseeded`` one."""

    def make(x):
        return x.generator() if isinstance(x, Reseeded) else x

    return tuple(map(make, args)), {k: make(v) for k, v in kwargs.items()}


_PLAIN = (*IMMUTABLE, torch.Size, Reseeded)  # values a re-call takes as they are


class Relaid(NamedTuple):
    """A call's arguments laid out anew: ``where`` says which, and how (None when no tensor
    could be); ``moved`` counts the tensors laid out; ``images`` the layout of 4-D ones."""

    args: tuple
    kwargs: dict
    where: str | None
    moved: int
    images: str


def relaid_all(args: tuple, kwargs: dict, names=()) -> list[Relaid]:
    """The arguments in each other layout a re-call should see (``relaid``): transposed,
    channels-last too where an argument is a batch of images (a convolution hands a
    channels-last batch on as channels-last, a transposed one as contiguous), and a window
    that starts inside its storage (code that reads memory from the storage's start)."""
    first = relaid(args, kwargs, names)
    if first is None or first.where is None:
        return [first] if first else []
    found = [first]
    for images in ("channels_last", "offset"):
        other = relaid(args, kwargs, names, images=images)
        if other is not None and other.where not in [f.where for f in found]:
            found.append(other)
    return found


def relaid(
    args: tuple, kwargs: dict, names=(), images: str = "transposed", only: int | None = None
) -> Relaid | None:
    """``args`` and ``kwargs`` with every tensor argument (also inside a list, tuple or
    dict argument; only the ``only``-th tensor met, where given) holding the same values
    in another layout ("transposed" from two dims on, ``images`` for four, "strided" for
    one; every tensor "offset" where ``images`` says so), or None when a re-call could not be compared: an argument that is not plain
    data (a module, a function, a generator, an iterator, a path...), a text too long to
    be a name, or a tensor that needs its gradient or shares memory with another.
    Arguments are named by ``names`` where given, else by position."""
    names = list(names)
    storages: set[int] = set()
    moved: list[str] = []
    met = [0]

    def lay(x, where: str, depth: int):
        if isinstance(x, torch.Tensor):
            if type(x) is not torch.Tensor or x.requires_grad or x.layout != torch.strided:
                raise _NotPlain
            if x.numel():
                ptr = x.untyped_storage().data_ptr()
                if ptr in storages:
                    raise _NotPlain  # views of each other: a re-lay would part them
                storages.add(ptr)
            if x.dim() == 0 or x.numel() < 2:
                return x
            met[0] += 1
            if only is not None and met[0] - 1 != only:
                return x
            if images == "offset":
                layout = "offset"
            else:
                layout = "strided" if x.dim() == 1 else images if x.dim() == 4 else "transposed"
            y = laid_out(x, layout)
            if y.is_contiguous() and layout != "offset":
                layout, y = "strided", laid_out(x, "strided")
            moved.append(f"{where} held the same values {_SEEN_AS[layout]}")
            return y
        if isinstance(x, str) and len(x) > 200:
            raise _NotPlain  # a corpus, not a name: a call given one is not cheap to repeat
        if type(x) in _PLAIN:
            return x
        if depth < 2 and type(x) in (list, tuple):
            return type(x)(lay(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(x))
        if depth < 2 and type(x) is dict:
            return {k: lay(v, f"{where}[{k!r}]", depth + 1) for k, v in x.items()}
        raise _NotPlain

    try:
        new_args = tuple(
            lay(v, f"`{names[i]}`" if i < len(names) else f"argument {i + 1}", 0)
            for i, v in enumerate(args)
        )
        new_kwargs = {k: lay(v, f"`{k}`", 0) for k, v in kwargs.items()}
    except _NotPlain:
        return None
    where = (moved[0] if len(moved) == 1 else " and ".join(moved)) if moved else None
    return Relaid(new_args, new_kwargs, where, len(moved), images)


class _NotPlain(Exception):
    pass


_TOLERANCE = {
    torch.float64: 1e-9,
    torch.complex128: 1e-9,
    torch.float16: 1e-2,
    torch.bfloat16: 2e-2,
}


def difference(
    a, b, where: str = "the result", depth: int = 0, numbers: bool = False, inputs: float = 0.0
) -> str | None:
    """Where two results of the same call on the same values differ beyond a reduction's
    rounding (None if nowhere): tensors by shape, dtype and value, containers by their
    items, numbers within rounding; what cannot be compared (a figure, an object) is not.
    With ``numbers``, an int and a float of the same value are the same. ``inputs`` is the
    largest magnitude among the call's inputs: a result far smaller than its inputs
    (x - mean on data far from zero) carries their rounding, so differences within 16 ulps
    of it are rounding too."""
    if numbers and type(a) in (int, float) and type(b) in (int, float) and type(a) is not type(b):
        a, b = float(a), float(b)
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{where}: shape {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"
        if a.device != b.device:
            return f"{where}: on {a.device} vs on {b.device}"
        if a.device.type == "meta":
            return None  # no values to compare
        a, b = a.detach().cpu(), b.detach().cpu()
        if a.is_floating_point() or a.is_complex():
            tol = _TOLERANCE.get(a.dtype, 1e-4)
            scale = a.abs().nan_to_num(0, 0, 0).amax().item() if a.numel() else 0.0
            atol = max(tol * max(scale, 1e-6), 16 * torch.finfo(a.dtype).eps * inputs)
            if torch.allclose(a, b, rtol=tol, atol=atol, equal_nan=True):
                return None
        elif torch.equal(a, b):
            return None
        return f"{where}: the values differ"
    if type(a) is not type(b):
        return f"{where}: a {type(a).__name__} vs a {type(b).__name__}"
    if isinstance(a, float):
        if a == b or (a != a and b != b) or abs(a - b) <= 1e-4 * max(abs(a), abs(b), 1e-6):
            return None
        return f"{where}: {a!r} vs {b!r}"
    if isinstance(a, _PLAIN):
        return None if a == b else f"{where}: {a!r} vs {b!r}"
    if depth > 4:
        return None
    if isinstance(a, list | tuple):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        fields = getattr(a, "_fields", None) or range(len(a))
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            name = f"{where}.{fields[i]}" if isinstance(fields, tuple) else f"{where}[{i}]"
            found = difference(x, y, name, depth + 1, numbers, inputs)
            if found:
                return found
        return None
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} vs {list(b)}"
        for k in a:
            found = difference(a[k], b[k], f"{where}[{k!r}]", depth + 1, numbers, inputs)
            if found:
                return found
        return None
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            found = difference(
                getattr(a, f.name, None),
                getattr(b, f.name, None),
                f"{where}.{f.name}",
                depth + 1,
                numbers,
                inputs,
            )
            if found:
                return found
    return None


def largest_input(args, kwargs) -> float:
    """The largest finite magnitude among the floating-point tensors of a call's arguments
    (0.0 if none): the scale their rounding is measured against."""
    leaves, _ = tree_flatten((args, kwargs))
    largest = 0.0
    for t in leaves:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() and not t.is_meta:
            largest = max(largest, t.detach().abs().nan_to_num(0, 0, 0).amax().item())
    return largest
