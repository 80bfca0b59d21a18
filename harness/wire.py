"""Plain data across the boundary between the student's code and the tests.

Whatever a probe returns (see ``harness.probe``) is reduced to plain data — ``None``,
``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``, lists, tuples, sets,
dicts, tensors, numpy arrays, dtypes, devices, paths — and a dataclass or named tuple
becomes a ``Record`` of its fields. ``encode`` writes that as bytes; ``decode`` reads
them back and can build nothing else: no pickle, no class the bytes name, subclasses
reduced to their base type. The grader decodes what a student's process sends with
it, so a value with a lying ``__eq__`` arrives as an honest ``float``.

Format: a 4-byte length, a JSON header describing the tree, then the raw buffers of
tensors, arrays and bytes it refers to by offset.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import torch

MAX_DEPTH = 64
MAX_NODES = 1_000_000

TENSOR_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
    )
}
# numpy has no bfloat16: its bytes travel as int16
_NUMPY_VIEW = {torch.bfloat16: torch.int16}
ARRAY_DTYPES = {
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
}


class NotPlainData(TypeError):
    """A value that cannot cross to the tests: only plain data does."""


class WireError(ValueError):
    """Bytes that do not decode to plain data (truncated, malformed or too large)."""


class Record:
    """A dataclass or named tuple from the student's module, as its fields.

    ``r.w``, ``r._fields`` and ``r._type`` work; a named tuple's record also unpacks,
    indexes and equals the tuple of its values. Two records are equal when their
    fields and values are (the class name is informative only).
    """

    __slots__ = ("_type", "_items", "_is_tuple")

    def __init__(self, type_name: str, items: dict[str, Any], is_tuple: bool = False) -> None:
        object.__setattr__(self, "_type", str(type_name))
        object.__setattr__(self, "_items", dict(items))
        object.__setattr__(self, "_is_tuple", bool(is_tuple))

    @property
    def _fields(self) -> tuple[str, ...]:
        return tuple(self._items)

    def _asdict(self) -> dict[str, Any]:
        return dict(self._items)

    def __getattr__(self, name: str):
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(
                f"{self._type} has no field {name!r} (fields: {', '.join(self._items)})"
            ) from None

    def __setattr__(self, name, value):
        raise AttributeError("a Record is read-only")

    def __iter__(self):
        if not self._is_tuple:
            raise TypeError(f"{self._type} is a dataclass, not a tuple: use its fields")
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k):
        if not self._is_tuple:
            raise TypeError(f"{self._type} is a dataclass, not a tuple: use its fields")
        return tuple(self._items.values())[k]

    def __eq__(self, other) -> bool:
        if isinstance(other, Record):
            return self._items == other._items
        if self._is_tuple and isinstance(other, tuple):
            return tuple(self._items.values()) == other
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._items.items())
        return f"{self._type}({inner})"


# ---- encoding (runs where the student's code ran: any object may come in) -------------


class _Encoder:
    def __init__(self) -> None:
        self.buffers: list[bytes] = []
        self.size = 0
        self.nodes = 0

    def buffer(self, data: bytes) -> list[int]:
        self.buffers.append(data)
        start, self.size = self.size, self.size + len(data)
        return [start, len(data)]

    def node(self, x, where: str, depth: int):
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise NotPlainData(f"{where} is nested too deeply (or is a cycle)")
        if x is None or type(x) is str or type(x) is bool:
            return x
        if isinstance(x, np.generic):
            x = x.item()
            if type(x) is bool:
                return x
        # Subclasses give their base value, whatever their conversions say.
        if isinstance(x, int):
            return int.__index__(x)
        if isinstance(x, float):
            v = float.__float__(x)
            return v if math.isfinite(v) else {"f": repr(v)}
        if isinstance(x, complex):
            return {
                "c": [
                    self.node(float(x.real), where, depth),
                    self.node(float(x.imag), where, depth),
                ]
            }
        if isinstance(x, str):
            return {"S": str.__str__(x)}
        if isinstance(x, bytes | bytearray | memoryview):
            return {"b": self.buffer(bytes(x))}
        if isinstance(x, torch.Tensor):
            return self.tensor(x, where)
        if isinstance(x, np.ndarray):
            return self.array(x, where)
        if isinstance(x, torch.dtype):
            return {"dt": str(x).removeprefix("torch.")}
        if isinstance(x, torch.device):
            return {"dev": str(x)}
        if isinstance(x, PurePath):
            return {"p": str(x)}
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            items = [
                [f.name, self.node(getattr(x, f.name), f"{where}.{f.name}", depth + 1)]
                for f in dataclasses.fields(x)
            ]
            return {"R": [type(x).__name__, items, False]}
        if isinstance(x, tuple) and hasattr(type(x), "_fields"):
            items = [
                [str(k), self.node(v, f"{where}.{k}", depth + 1)]
                for k, v in zip(type(x)._fields, tuple.__iter__(x))
            ]
            return {"R": [type(x).__name__, items, True]}
        if isinstance(x, Record):
            items = [[k, self.node(v, f"{where}.{k}", depth + 1)] for k, v in x._items.items()]
            return {"R": [x._type, items, x._is_tuple]}
        if isinstance(x, list):
            return [
                self.node(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(list.__iter__(x))
            ]
        if isinstance(x, tuple):
            return {
                "t": [
                    self.node(v, f"{where}[{i}]", depth + 1)
                    for i, v in enumerate(tuple.__iter__(x))
                ]
            }
        if isinstance(x, set | frozenset):
            tag = "fs" if isinstance(x, frozenset) else "s"
            return {tag: [self.node(v, f"{where}{{...}}", depth + 1) for v in x]}
        if isinstance(x, dict):
            return {
                "d": [
                    [
                        self.node(k, f"{where} key", depth + 1),
                        self.node(v, f"{where}[{k!r}]", depth + 1),
                    ]
                    for k, v in dict.items(x)
                ]
            }
        raise NotPlainData(
            f"{where} is a {type(x).__module__}.{type(x).__qualname__}: only plain data "
            "(numbers, strings, tensors, lists, tuples, dicts) can be checked"
        )

    def tensor(self, x: torch.Tensor, where: str):
        if x.layout != torch.strided:
            x = x.to_dense()
        t = torch.Tensor.detach(x)
        if t.device.type != "cpu":
            t = t.cpu()
        name = str(t.dtype).removeprefix("torch.")
        if name not in TENSOR_DTYPES:
            raise NotPlainData(f"{where} is a tensor of dtype {t.dtype}, which cannot be checked")
        t = t.contiguous()
        if t.is_conj():
            t = t.resolve_conj()
        view = t.view(_NUMPY_VIEW.get(t.dtype, t.dtype)) if t.numel() else t
        data = view.numpy().tobytes() if t.numel() else b""
        return {"T": [name, list(t.shape), self.buffer(data), bool(x.requires_grad)]}

    def array(self, x: np.ndarray, where: str):
        name = x.dtype.name
        if name not in ARRAY_DTYPES:
            raise NotPlainData(
                f"{where} is a numpy array of dtype {x.dtype}, which cannot be checked"
            )
        data = np.ascontiguousarray(x).tobytes()
        return {"N": [name, list(x.shape), self.buffer(data)]}


def encode(obj) -> bytes:
    """``obj`` as bytes, or ``NotPlainData`` naming the part that is not plain data."""
    enc = _Encoder()
    header = json.dumps(enc.node(obj, "the value", 0), allow_nan=False).encode()
    return struct.pack(">I", len(header)) + header + b"".join(enc.buffers)


# ---- decoding (runs where the verdict is made: trusts nothing in the bytes) -----------


def _count(shape) -> int:
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise WireError("bad shape")
    return math.prod(shape)


class _Decoder:
    def __init__(self, data: bytes, start: int) -> None:
        self.data = memoryview(data)
        self.start = start

    def span(self, ref) -> memoryview:
        if not (isinstance(ref, list) and len(ref) == 2 and all(type(n) is int for n in ref)):
            raise WireError("bad buffer reference")
        offset, length = ref
        lo = self.start + offset
        if offset < 0 or length < 0 or lo + length > len(self.data):
            raise WireError("buffer out of range")
        return self.data[lo : lo + length]

    def node(self, x, depth: int):
        if depth > MAX_DEPTH:
            raise WireError("nested too deeply")
        if x is None or type(x) in (bool, int, float, str):
            return x
        if type(x) is list:
            return [self.node(v, depth + 1) for v in x]
        if type(x) is not dict or len(x) != 1:
            raise WireError("malformed node")
        ((tag, v),) = x.items()
        if tag == "S" and type(v) is str:
            return v
        if tag == "f" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "c" and type(v) is list and len(v) == 2:
            re_, im = (self.node(p, depth + 1) for p in v)
            if type(re_) is float and type(im) is float:
                return complex(re_, im)
        if tag == "t" and type(v) is list:
            return tuple(self.node(e, depth + 1) for e in v)
        if tag in ("s", "fs") and type(v) is list:
            items = [self.node(e, depth + 1) for e in v]
            try:
                return set(items) if tag == "s" else frozenset(items)
            except TypeError:
                raise WireError("unhashable set member") from None
        if tag == "d" and type(v) is list:
            out = {}
            for pair in v:
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("malformed dict item")
                key = self.node(pair[0], depth + 1)
                try:
                    out[key] = self.node(pair[1], depth + 1)
                except TypeError:
                    raise WireError("unhashable dict key") from None
            return out
        if tag == "b":
            return bytes(self.span(v))
        if tag == "p" and type(v) is str:
            return Path(v)
        if tag == "dt" and v in TENSOR_DTYPES:
            return TENSOR_DTYPES[v]
        if tag == "dev" and type(v) is str and len(v) < 64:
            try:
                return torch.device(v)
            except (RuntimeError, ValueError):
                raise WireError("bad device") from None
        if tag == "T" and type(v) is list and len(v) == 4 and v[0] in TENSOR_DTYPES:
            dtype = TENSOR_DTYPES[v[0]]
            buf = self.span(v[2])
            count = _count(v[1])
            itemsize = torch.empty((), dtype=dtype).element_size()
            if count * itemsize != len(buf):
                raise WireError("tensor size does not match its data")
            store = _NUMPY_VIEW.get(dtype, dtype)
            flat = (
                torch.frombuffer(bytearray(buf), dtype=store)
                if count
                else torch.empty(0, dtype=store)
            )
            t = flat.view(dtype).reshape(v[1]) if count else torch.empty(v[1], dtype=dtype)
            if v[3] is True and (t.is_floating_point() or t.is_complex()):
                t.requires_grad_(True)
            return t
        if tag == "N" and type(v) is list and len(v) == 3 and v[0] in ARRAY_DTYPES:
            dtype = np.dtype(v[0])
            buf = self.span(v[2])
            if _count(v[1]) * dtype.itemsize != len(buf):
                raise WireError("array size does not match its data")
            return np.frombuffer(bytes(buf), dtype=dtype).reshape(v[1]).copy()
        if tag == "R" and type(v) is list and len(v) == 3 and type(v[0]) is str:
            if type(v[1]) is not list or type(v[2]) is not bool:
                raise WireError("malformed record")
            items = {}
            for pair in v[1]:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                    raise WireError("malformed record field")
                items[pair[0]] = self.node(pair[1], depth + 1)
            return Record(v[0][:100], items, v[2])
        raise WireError(f"unknown or malformed node {tag!r}")


def decode(data: bytes, max_bytes: int | None = None):
    """The plain data ``encode`` wrote; ``WireError`` for anything else."""
    if max_bytes is not None and len(data) > max_bytes:
        raise WireError(f"{len(data)} bytes, more than the {max_bytes} allowed")
    if len(data) < 4:
        raise WireError("truncated")
    (n,) = struct.unpack(">I", data[:4])
    if 4 + n > len(data):
        raise WireError("truncated header")
    try:
        header = json.loads(bytes(data[4 : 4 + n]))
    except (ValueError, RecursionError):
        raise WireError("malformed header") from None
    try:
        return _Decoder(data, 4 + n).node(header, 0)
    except RecursionError:
        raise WireError("nested too deeply") from None


def plain(obj):
    """``obj`` as the tests will see it: its plain-data copy (``NotPlainData`` if none)."""
    return decode(encode(obj))
