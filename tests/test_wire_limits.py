"""``harness.wire.decode`` reads bytes a student's process wrote, inside the trusted
process: a hostile frame must end in ``WireError`` quickly and in bounded memory, while
every honest value still makes the round trip (fast: no sandbox, no grading run).

Peak memory is measured two ways: ``tracemalloc`` (Python's and numpy's allocations)
for frames built here, and the peak RSS of a fresh process for the 64 MiB headers, where
building the frame would hide the decoder's own growth in this process's high-water mark.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import numpy as np
import pytest
import torch

from harness import wire
from harness.target import REPO

MiB = 1 << 20


def frame(header: bytes | str, body: bytes = b"") -> bytes:
    if isinstance(header, str):
        header = header.encode()
    return struct.pack(">I", len(header)) + header + body


def refused(data: bytes, *, peak_mib: float = 64, seconds: float = 10) -> str:
    """The ``WireError`` decoding ``data`` raises, after checking it came in time and
    within ``peak_mib`` of traced allocations."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(wire.WireError) as err:
            wire.decode(data)
        took = time.monotonic() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < peak_mib * MiB, f"decoding took {peak / MiB:.0f} MiB before refusing"
    assert took < seconds, f"decoding took {took:.1f} s before refusing"
    return str(err.value)


# ---- honest values still make the round trip --------------------------------------------


@dataclasses.dataclass
class Stats:
    mean: float
    counts: list
    extra: object = None


class Pair(NamedTuple):
    left: object
    right: object


@pytest.mark.parametrize("dtype", list(wire.TENSOR_DTYPES.values()), ids=str)
def test_tensors_of_every_dtype_round_trip(dtype):
    base = torch.arange(24).reshape(2, 3, 4) % 7
    t = base.to(dtype)
    for value in (t, t.transpose(0, 2), t[:, :0], torch.tensor(3).to(dtype)):
        back = wire.decode(wire.encode(value))
        assert back.dtype == dtype and back.shape == value.shape
        assert torch.equal(back, value)
    if dtype.is_floating_point or dtype.is_complex:
        for value in (t, t[:, :0]):
            grad = wire.decode(wire.encode(value.clone().requires_grad_(True)))
            assert grad.requires_grad and torch.equal(grad.detach(), value)


@pytest.mark.parametrize("name", sorted(wire.ARRAY_DTYPES))
def test_arrays_of_every_dtype_round_trip(name):
    a = (np.arange(30) % 5).astype(name).reshape(5, 6)
    for value in (a, a.T, a[:0], np.array(2, dtype=name)):
        back = wire.decode(wire.encode(value))
        assert back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)


def test_nested_records_and_containers_round_trip():
    value = {
        "stats": Stats(0.5, [1, 2, 3], Pair(torch.ones(2), np.zeros(3))),
        "pair": Pair((1, "a", None), {frozenset({1, 2}), 3}),
        ("key", 2): [b"\x00\xff", 1 + 2j, float("nan"), -math.inf, 'q"\\[{', "é€"],
        "more": [torch.float16, torch.device("cpu"), PurePosixPath("/a/b"), True, 2**80],
    }
    back = wire.decode(wire.encode(value))
    assert back["stats"].mean == 0.5 and back["stats"].counts == [1, 2, 3]
    assert torch.equal(back["stats"].extra.left, torch.ones(2))
    np.testing.assert_array_equal(back["stats"].extra.right, np.zeros(3))
    assert back["pair"] == ((1, "a", None), {frozenset({1, 2}), 3})
    first = back[("key", 2)]
    assert first[:2] == [b"\x00\xff", 1 + 2j] and math.isnan(first[2])
    assert first[3:] == [-math.inf, 'q"\\[{', "é€"]
    assert back["more"] == [torch.float16, torch.device("cpu"), Path("/a/b"), True, 2**80]


@dataclasses.dataclass
class Box:
    inner: object


@pytest.mark.parametrize(
    "leaf", [torch.ones(2, 2), complex(math.nan, 1.0), {"k": 1.5}], ids=["tensor", "nan", "dict"]
)
def test_values_as_deep_as_encode_allows_round_trip(leaf):
    """Records cost the most JSON nesting per level: MAX_JSON_DEPTH leaves room for them."""
    value = leaf
    for _ in range(wire.MAX_DEPTH - (1 if isinstance(leaf, dict) else 0)):
        value = Box(value)
    back = wire.decode(wire.encode(value))
    for _ in range(wire.MAX_DEPTH - (1 if isinstance(leaf, dict) else 0)):
        back = back.inner
    if isinstance(leaf, torch.Tensor):
        assert torch.equal(back, leaf)
    elif isinstance(leaf, complex):
        assert math.isnan(back.real) and back.imag == 1.0
    else:
        assert back == leaf
    with pytest.raises(wire.NotPlainData, match="nested too deeply"):
        wire.encode(Box(value))


def test_encode_refuses_what_decode_would_refuse(monkeypatch):
    """An honest value beyond a limit reaches the student as ``NotPlainData``."""
    monkeypatch.setattr(wire, "MAX_HEADER_TOKENS", 1000)
    assert wire.decode(wire.encode(list(range(900)))) == list(range(900))
    with pytest.raises(wire.NotPlainData, match="too large"):
        wire.encode(list(range(2000)))
    monkeypatch.setattr(wire, "MAX_HEADER_BYTES", 100)
    with pytest.raises(wire.NotPlainData, match="too large"):
        wire.encode("x" * 200)
    monkeypatch.setattr(wire, "MAX_ELEMENTS", 10)
    with pytest.raises(wire.NotPlainData, match="too large"):
        wire.encode(torch.zeros(11))
    with pytest.raises(wire.NotPlainData, match="too large"):
        wire.encode(np.zeros((0, 11)))


# ---- the reported attack: a 64 MiB header of nested empty lists -------------------------

CHILD = """
import resource, struct, sys, time
from harness import wire
size, kind = 64 << 20, sys.argv[1]
if kind == "flat":
    header = b"[" + b"[]," * (size // 3 - 1) + b"[]]"
else:
    header = b"[" * (size // 2) + b"]" * (size // 2)
data = struct.pack(">I", len(header)) + header
del header
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.monotonic()
try:
    wire.decode(data)
    outcome = "decoded"
except wire.WireError as exc:
    outcome = "WireError: " + str(exc)
took = time.monotonic() - start
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(outcome, grown, took, sep="\\n")
"""


@pytest.mark.parametrize("kind", ["flat", "deep"])
def test_a_64_mib_header_of_nested_lists_is_refused_fast_in_bounded_memory(kind):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, kind],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=90,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("decoding a 64 MiB header ran for more than 90 s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome, grown_kib, took = proc.stdout.split("\n")[:3]
    assert outcome.startswith("WireError"), outcome
    assert int(grown_kib) < 200 * 1024, f"peak RSS grew {int(grown_kib) >> 10} MiB"
    assert float(took) < 5, f"took {float(took):.1f} s"


# ---- hostile headers within the byte limit ----------------------------------------------


def _within(unit: bytes) -> bytes:
    """A JSON list of copies of ``unit`` just under the header limit."""
    count = (wire.MAX_HEADER_BYTES - 2) // (len(unit) + 1)
    return b"[" + b",".join([unit] * count) + b"]"


@pytest.mark.parametrize(
    "header, reason",
    [
        (lambda: _within(b"[]"), "values"),  # ~2.8 million empty lists
        (lambda: _within(b"0"), "values"),  # ~4 million numbers
        (lambda: _within(b'{"t":[]}'), "values"),  # ~900,000 empty tuples
        (lambda: b"[" * 400_000 + b"]" * 400_000, "deep"),  # fewer values than the limit
        (lambda: b'{"t":' * 10_000 + b"0" + b"}" * 10_000, "deep"),
        (lambda: b'{"d":[[' * 5_000 + b"0,0" + b"]]}" * 5_000, "deep"),
    ],
    ids=["empty-lists", "numbers", "tuples", "deep-lists", "deep-tuples", "deep-dicts"],
)
def test_hostile_headers_within_the_byte_limit_are_refused(header, reason):
    data = frame(header())
    assert len(data) <= wire.MAX_HEADER_BYTES + 4
    assert reason in refused(data)


# The costliest header found within every limit: 240,000 lists of three nested lists
# (about a million values to build, a second or so of CPU).
COSTLY = b"[" + b",".join([b"[[[]]]"] * 240_000) + b"]"


def test_decoding_gives_up_when_the_cpu_time_it_was_given_is_spent(monkeypatch):
    """Checked on a scripted clock (a timed assertion would depend on the machine): each
    look finds another 0.1 s spent, so an allowance of 0.45 s ends at the sixth look —
    after the header check, the parse and three stretches of 4,096 values, long before
    the frame's 960,000 values (about 235 looks) are built."""
    data = frame(COSTLY)
    assert len(wire.decode(data)) == 240_000  # legal: only its cost is in question
    honest = wire.encode({"ok": True, "value": [torch.ones(3, 4), {"loss": 0.5}] * 50})
    assert wire.decode(honest, cpu_seconds=0.02)["ok"] is True  # on the real clock
    looks = []

    def clock():
        looks.append(1)
        return 0.1 * len(looks)

    monkeypatch.setattr(wire.time, "thread_time", clock)
    with pytest.raises(wire.OutOfTime):
        wire.decode(data, cpu_seconds=0.45)
    assert len(looks) <= 10, f"decoding looked at its clock {len(looks)} times before stopping"


def test_nesting_deeper_than_any_value_is_refused_before_the_decoder_recurses():
    just = b"[" * wire.MAX_JSON_DEPTH + b"]" * wire.MAX_JSON_DEPTH
    assert "deep" in refused(frame(just))  # parsed, then the decoder's own limit
    over = b"[" * (wire.MAX_JSON_DEPTH + 1) + b"]" * (wire.MAX_JSON_DEPTH + 1)
    assert "header nested too deeply" in refused(frame(over))


def test_brackets_in_strings_do_not_count_and_escapes_cannot_hide_them():
    text = '"' + '[{\\"\\\\' * 10_000 + '"'
    assert wire.decode(frame(f'{{"S":{text}}}')) == json.loads(text)
    # the string holds one backslash, so its quote closes it: the nesting after it counts
    hidden = '["\\\\", ' + "[" * 300 + "]" * 300 + "]"
    assert json.loads(hidden)[0] == "\\"
    assert "header nested too deeply" in refused(frame(hidden))


@pytest.mark.parametrize(
    "header",
    [
        b"[NaN, Infinity, -Infinity]",  # json reads them; encode never writes them
        '["é"]'.encode(),  # encode writes ASCII only
        "[1]".encode("utf-16-le"),  # json.loads would guess the encoding of bytes
        b"]]][[[",
        b"[[[]",
        b"[1 2]",
        b'{"dt": []}',  # an unhashable dtype name
        b'{"N": [[], [1], [0, 1]]}',
        b'{"T": ["float32", [2, true], [0, 0], false]}',
        b'{"c": [[], 1]}',
        b'{"R": ["x", [[1, 2]], false]}',
        b"9" * 5000,  # more digits than int() reads
    ],
)
def test_malformed_headers_are_wire_errors(header):
    refused(frame(header))


# ---- tensors, arrays and bytes that do not match the buffer ------------------------------


@pytest.mark.parametrize(
    "node",
    [
        ["float32", [10**6, 10**6], [0, 8], False],  # 10^12 elements in 8 bytes
        ["float32", [0, 10**12], [0, 0], False],  # no elements, an absurd shape
        ["float32", [0, 2**64], [0, 0], False],  # a size torch cannot even hold
        ["float32", [2] * 33, [0, 8], False],  # too many dimensions
        ["float32", [-2, -1], [0, 8], False],
        ["uint8", [8], [0, 9], False],
    ],
)
def test_tensor_headers_that_claim_more_than_their_bytes_are_refused(node):
    refused(frame(json.dumps({"T": node}), bytes(8)), peak_mib=16, seconds=2)


@pytest.mark.parametrize("shape", [[10**12], [0, 10**12], [0, 2**64], [1] * 40, [2, -4]], ids=str)
def test_array_headers_that_claim_more_than_their_bytes_are_refused(shape):
    refused(frame(json.dumps({"N": ["float64", shape, [0, 8]]}), bytes(8)), peak_mib=16)


def test_buffers_are_each_used_once_in_order():
    blob = bytes(1 << 20)
    alias = json.dumps([{"b": [0, len(blob)]}] * 200)  # one MiB, read 200 times
    assert "buffer" in refused(frame(alias, blob), peak_mib=16)
    assert "buffer" in refused(frame('[{"b": [4, 4]}, {"b": [0, 4]}]', bytes(8)))
    assert "no value" in refused(frame('{"b": [0, 4]}', bytes(8)))  # 4 bytes left over
    for ref in ([0, 9], [-1, 2], [0, -1], [2**70, 1], [0.0, 1], [0]):
        refused(frame(json.dumps({"b": ref}), bytes(8)))


def test_every_truncation_of_an_honest_frame_is_refused():
    data = wire.encode({"t": torch.arange(6.0), "a": np.ones(3), "b": b"xyz", "s": "text"})
    for cut in range(len(data)):
        refused(data[:cut])
    refused(data + b"\x00")
    (n,) = struct.unpack(">I", data[:4])
    refused(struct.pack(">I", n + 1000) + data[4:])  # a header longer than the frame
    refused(struct.pack(">I", 0xFFFFFFFF) + data[4:])


def test_frames_beyond_the_frame_limit_are_refused_unread(monkeypatch):
    monkeypatch.setattr(wire, "MAX_FRAME_BYTES", 1000)
    assert "more than" in refused(frame("[]", bytes(2000)))
    monkeypatch.undo()
    data = frame('{"b": [0, 100]}', bytes(100))
    assert wire.decode(data) == bytes(100)
    with pytest.raises(wire.WireError, match="more than"):
        wire.decode(data, max_bytes=50)
