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
import time
from pathlib import Path, PurePath
from typing import Any

import numpy as np
import torch

# ---- limits ----------------------------------------------------------------------------
# The trusted process decodes bytes that a student's process wrote, so ``decode`` checks
# each size below before it builds anything of that size: a frame within the limits
# costs about its own length again plus at most ~130 MiB (measured: the worst headers
# within the limits, e.g. 250,000 empty sets). ``encode`` refuses (NotPlainData) what
# ``decode`` would refuse, so an honest value that is too large reaches the student as
# "too large", never as tampering. The largest honest frames the course's tests exchange
# (every chapter's solutions, measured): 3 MiB in all, a 64 KiB header of 13,500 JSON
# values, JSON depth 22, tensors of 786,432 elements and 4 dimensions.

# Python containers inside containers: far beyond any honest value; it stops cycles and
# recursion, in ``encode`` and ``decode`` alike.
MAX_DEPTH = 64
# Values in one frame (numbers, strings, containers, tensors, ...): 75 times the largest
# honest frame; more belongs in a tensor, which travels as one value.
MAX_NODES = 1_000_000
# The whole frame. The trusted side refuses a longer reply before reading it (256 MiB in
# grader/verdict.py); tensors and arrays travel as raw bytes, so this is their room.
MAX_FRAME_BYTES = 256 << 20
# The JSON header: 128 times the largest honest one. It is held about four times while
# it is checked and parsed (bytes, text, its strings, one check array at a time).
MAX_HEADER_BYTES = 8 << 20
# JSON values and keys in the header, counted from its punctuation before parsing, so
# ``json`` builds at most this many objects. 75 times the largest honest header.
MAX_HEADER_TOKENS = MAX_NODES
# JSON nesting: a record costs 4 levels per level of the value ({"R": [name, [[key,
# value], ...], is_tuple]}) and a tensor 3 more, so no value ``encode`` accepts needs
# more. Far below the recursion limit of json's C parser and of the decoder.
MAX_JSON_DEPTH = 4 * MAX_DEPTH + 8
# Dimensions of a tensor or array: numpy's own limit before 2.0 (honest values: up to 4).
MAX_NDIM = 32
# Elements of a tensor or array, a zero-length dimension counting as one (so a shape of
# zero elements cannot name absurd sizes either): each element takes a byte of the frame
# at least, so no frame within MAX_FRAME_BYTES carries more.
MAX_ELEMENTS = MAX_FRAME_BYTES

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


class OutOfTime(WireError):
    """Decoding took more of this thread's CPU time than it was given: the reply came
    too late to be checked within its call's time."""


# Values decoded between two looks at the clock (a look costs about a microsecond).
_CLOCK_EVERY = 4096


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

    def shape(self, shape, where: str) -> None:
        if len(shape) > MAX_NDIM or math.prod(max(n, 1) for n in shape) > MAX_ELEMENTS:
            raise NotPlainData(
                f"{where} is too large to check (at most {MAX_NDIM} dimensions and "
                f"{MAX_ELEMENTS} elements)"
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
        self.shape(t.shape, where)
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
        self.shape(x.shape, where)
        data = np.ascontiguousarray(x).tobytes()
        return {"N": [name, list(x.shape), self.buffer(data)]}


def encode(obj) -> bytes:
    """``obj`` as bytes, or ``NotPlainData`` naming the part that is not plain data (or
    saying it is larger than ``decode`` accepts)."""
    enc = _Encoder()
    header = json.dumps(enc.node(obj, "the value", 0), allow_nan=False).encode()
    try:
        # A header this short cannot break a limit (a value per character at most, a
        # level per two), so most calls skip the check; decode checks every header.
        if len(header) > min(MAX_HEADER_BYTES, MAX_HEADER_TOKENS, 2 * MAX_JSON_DEPTH):
            _check_header(header)
    except WireError as exc:
        raise NotPlainData(f"the value is too large to check: {exc}") from None
    if 4 + len(header) + enc.size > MAX_FRAME_BYTES:
        raise NotPlainData(
            f"the value is too large to check: more than {MAX_FRAME_BYTES >> 20} MiB"
        )
    return struct.pack(">I", len(header)) + header + b"".join(enc.buffers)


# ---- decoding (runs where the verdict is made: trusts nothing in the bytes) -----------

_QUOTE = ord('"')
# '[' and '{' open (+1), ']' and '}' close (-1); every JSON value but the first follows
# '[', ':' or ',' and every key follows '{' or ',', outside strings
_DEPTH_STEP = np.zeros(256, dtype=np.int8)
_DEPTH_STEP[list(b"[{")], _DEPTH_STEP[list(b"]}")] = 1, -1
_BEFORE_VALUE = np.zeros(256, dtype=bool)
_BEFORE_VALUE[list(b"[{,:")] = True


def _reject_constant(name: str):
    raise WireError(f"{name} is not written by encode")


def _check_header(header: bytes) -> None:
    """``WireError`` unless parsing ``header`` stays within the limits. Nothing is
    parsed: a few vectorised passes over its characters, each array at most its size.

    What ``json`` builds before it stops at a first error lies in a prefix that this
    reading agrees with, so the counts bound malformed headers as well."""
    if len(header) > MAX_HEADER_BYTES:
        raise WireError(f"a header of {len(header)} bytes (at most {MAX_HEADER_BYTES})")
    if not header.isascii():
        raise WireError("a header that is not ASCII")
    # Escaped backslashes, then escaped quotes, are string content: without them each
    # quote left opens or closes a string (a run of backslashes pairs off from its left).
    text = header.replace(b"\\\\", b"").replace(b'\\"', b"")
    codes = np.frombuffer(text, dtype=np.uint8)
    inside = np.cumsum(codes == _QUOTE, dtype=np.uint8)  # parity survives the wrap
    outside = (inside & 1) == 0
    del inside
    tokens = 1 + int(np.count_nonzero(_BEFORE_VALUE[codes] & outside))
    if tokens > MAX_HEADER_TOKENS:
        raise WireError(f"a header of more than {MAX_HEADER_TOKENS} values")
    steps = _DEPTH_STEP[codes]
    steps = steps[(steps != 0) & outside]
    opened = int(np.count_nonzero(steps > 0))
    if 2 * opened != len(steps):
        raise WireError("a header whose brackets do not match")
    if opened:  # at most MAX_HEADER_TOKENS of each: a small array
        depth = np.cumsum(steps, dtype=np.int32)
        if int(depth.max()) > MAX_JSON_DEPTH:
            raise WireError("a header nested too deeply")
        if int(depth.min()) < 0:
            raise WireError("a header whose brackets do not match")


def _count(shape) -> int:
    """Elements of ``shape``, or ``WireError`` if it is not a shape within the limits."""
    if type(shape) is not list or len(shape) > MAX_NDIM:
        raise WireError("bad shape")
    room = 1
    for n in shape:
        if type(n) is not int or n < 0 or n > MAX_ELEMENTS:
            raise WireError("bad shape")
        room *= max(n, 1)
        if room > MAX_ELEMENTS:
            raise WireError(f"a shape of more than {MAX_ELEMENTS} elements")
    return math.prod(shape)


class _Decoder:
    def __init__(self, data, start: int, stop: float) -> None:
        self.data = memoryview(data)
        self.start = start
        self.cursor = 0  # buffers come in order, each once: where the next one starts
        self.size = len(self.data) - start
        self.nodes = 0
        self.stop = stop  # this thread's CPU clock at which decoding gives up

    def span(self, ref) -> memoryview:
        if not (type(ref) is list and len(ref) == 2 and all(type(n) is int for n in ref)):
            raise WireError("bad buffer reference")
        offset, length = ref
        if offset != self.cursor or length < 0 or length > self.size - offset:
            raise WireError("a buffer out of place or out of range")
        self.cursor += length
        lo = self.start + offset
        return self.data[lo : lo + length]

    def node(self, x, depth: int):
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise WireError(f"more than {MAX_NODES} values")
        if self.nodes % _CLOCK_EVERY == 0:
            _in_time(self.stop)
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
            re_, im = (self.node(p, depth) for p in v)  # at its own depth, as in encode
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
        if tag == "dt" and type(v) is str and v in TENSOR_DTYPES:
            return TENSOR_DTYPES[v]
        if tag == "dev" and type(v) is str and len(v) < 64:
            try:
                return torch.device(v)
            except (RuntimeError, ValueError):
                raise WireError("bad device") from None
        if tag == "T" and type(v) is list and len(v) == 4 and type(v[0]) is str:
            dtype = TENSOR_DTYPES.get(v[0])
            if dtype is None:
                raise WireError("unknown tensor dtype")
            buf = self.span(v[2])
            count = _count(v[1])
            itemsize = torch.empty((), dtype=dtype).element_size()
            if count * itemsize != len(buf):
                raise WireError("tensor size does not match its data")
            if count:
                store = _NUMPY_VIEW.get(dtype, dtype)
                t = torch.frombuffer(bytearray(buf), dtype=store).view(dtype).reshape(v[1])
            else:
                t = torch.empty(v[1], dtype=dtype)
            if v[3] is True and (t.is_floating_point() or t.is_complex()):
                t.requires_grad_(True)
            return t
        if tag == "N" and type(v) is list and len(v) == 3 and type(v[0]) is str:
            if v[0] not in ARRAY_DTYPES:
                raise WireError("unknown array dtype")
            dtype = np.dtype(v[0])
            buf = self.span(v[2])
            if _count(v[1]) * dtype.itemsize != len(buf):
                raise WireError("array size does not match its data")
            return np.frombuffer(buf, dtype=dtype).reshape(v[1]).copy()
        if tag == "R" and type(v) is list and len(v) == 3 and type(v[0]) is str:
            if type(v[1]) is not list or type(v[2]) is not bool:
                raise WireError("malformed record")
            items = {}
            for pair in v[1]:
                if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                    raise WireError("malformed record field")
                items[pair[0]] = self.node(pair[1], depth + 1)
            return Record(v[0][:100], items, v[2])
        raise WireError(f"unknown or malformed node {tag!r}"[:80])


def _in_time(stop: float) -> None:
    if time.thread_time() > stop:
        raise OutOfTime("not decoded within the time left to its call")


def decode(data: bytes, max_bytes: int | None = None, cpu_seconds: float | None = None):
    """The plain data ``encode`` wrote; ``WireError`` for anything else, raised before
    anything larger than the limits above is built. Given ``cpu_seconds``, ``OutOfTime``
    once decoding has used that much of this thread's CPU time (load on the machine does
    not count): the worst frame within the limits costs about a second."""
    stop = math.inf if cpu_seconds is None else time.thread_time() + max(0.0, cpu_seconds)
    limit = MAX_FRAME_BYTES if max_bytes is None else min(max_bytes, MAX_FRAME_BYTES)
    if len(data) > limit:
        raise WireError(f"{len(data)} bytes, more than the {limit} allowed")
    if len(data) < 4:
        raise WireError("truncated")
    (n,) = struct.unpack(">I", data[:4])
    if n > MAX_HEADER_BYTES:
        raise WireError(f"a header of {n} bytes (at most {MAX_HEADER_BYTES})")
    if 4 + n > len(data):
        raise WireError("truncated header")
    header = bytes(data[4 : 4 + n])
    _check_header(header)
    _in_time(stop)
    try:
        tree = json.loads(header.decode("ascii"), parse_constant=_reject_constant)
    except (ValueError, RecursionError):  # WireError is a ValueError: its own text is lost
        raise WireError("malformed header") from None
    del header
    _in_time(stop)
    decoder = _Decoder(data, 4 + n, stop)
    try:
        value = decoder.node(tree, 0)
    except WireError:
        raise
    except RecursionError:
        raise WireError("nested too deeply") from None
    except (TypeError, ValueError, RuntimeError, OverflowError, IndexError, KeyError):
        raise WireError("malformed node") from None
    if decoder.cursor != decoder.size:
        raise WireError("bytes that no value refers to")
    return value


def plain(obj):
    """``obj`` as the tests will see it: its plain-data copy (``NotPlainData`` if none)."""
    return decode(encode(obj))
