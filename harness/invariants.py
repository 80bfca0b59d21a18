"""Invariants of every call into the student's code, checked by the harness on each call.

Every function of a student's module that a test reaches through ``chapter_module`` —
from a test body with plain data, or inside a probe with live objects, in a student's
own pytest run and in the grader's split run alike — is called through ``checked``,
which holds the call to what any contract says unless it says otherwise:

- **arguments unchanged**: what the caller passed in (tensors by value and metadata,
  their ``.grad``, lists, dicts, sets, numpy arrays, modules' parameters, buffers,
  submodules and train/eval modes, optimizers' settings and state, dataclasses) is as it
  was after the call;
- **global state unchanged**: torch's, numpy's and Python's global random states, grad
  mode, default dtype, torch's thread count and algorithm flags, pyplot's figures and
  current figure and rcParams, the working directory, the environment, open files;
- **writes only where told**: no file appears or changes in the working directory or
  beside a path the call was given, except that path;
- **results are the call's own**: nothing in the result shares memory with, or is, an
  object the caller passed in, and no call hands out an object that an earlier call
  returned (a cache: editing one result would change another).

``harness.contracts`` lists the exceptions a task's contract declares. A broken
invariant raises ``Broken`` (an ``AssertionError``: the test fails, naming the invariant,
the object and what changed); it is also kept until the probe or call that reached the
student's code ends, so a probe that catches exceptions cannot swallow it. Restorable
global state (random states, modes, working directory, environment) is put back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import os
import random
import sys
import types
import weakref
from collections import deque
from pathlib import Path

import numpy as np
import torch

from harness import contracts

MAX_NODES = 20_000  # objects of one argument or result looked at: beyond any course value
MAX_DEPTH = 8
KEPT_RESULTS = 4  # earlier results per function compared with a new one
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)


class Broken(AssertionError):
    """A call into the student's code broke an invariant every call keeps."""


BROKEN_TYPE = f"{__name__}.Broken"  # how the student's process names it in an error report
_pending: list[Broken] = []  # broken invariants not yet reported (see module doc)


def take_pending() -> Broken | None:
    """The first invariant broken since the last call (and forget the rest)."""
    first = _pending[0] if _pending else None
    _pending.clear()
    return first


# ---- showing values ----------------------------------------------------------------------


def _show(v, limit: int = 40) -> str:
    if isinstance(v, float) and math.isfinite(v):
        text = f"{v:.6g}"
    elif isinstance(v, torch.Tensor):
        text = f"a tensor of shape {tuple(v.shape)}"
    elif isinstance(v, list | dict | tuple | set) and len(repr(v)) > limit:
        text = f"a {type(v).__name__} of {len(v)}"
    else:
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def _same_immutable(a, b) -> bool:
    """Equal values of immutable kinds (NaN equals NaN): a new float object of the same
    value is no change."""
    if type(a) is not type(b) or not isinstance(a, _IMMUTABLE + (tuple, frozenset)):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(x is y or _same_immutable(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a value's own __eq__
        return False


# ---- tensors -----------------------------------------------------------------------------


def _storage(t: torch.Tensor):
    """``(start, end)`` of the memory behind ``t`` (None when it has none to share)."""
    try:
        s = t.untyped_storage()
        n = s.nbytes()
    except (RuntimeError, NotImplementedError, TypeError):
        return None
    if not n or t.device.type == "meta":
        return None
    return (t.device.type, s.data_ptr(), s.data_ptr() + n)


def _bits(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    if flat.numel() and flat.stride(0) != 1:  # one element of a strided window keeps its stride
        flat = flat.new_empty(flat.shape).copy_(flat)
    return flat.view(torch.uint8)


def _tensor_state(t: torch.Tensor):
    if t.layout != torch.strided or t.device.type == "meta":
        return (tuple(t.shape), t.dtype, t.layout, None, None, None, None, None)
    data = t.detach().clone(memory_format=torch.contiguous_format)
    grad = None
    if t.is_leaf and t.requires_grad:
        g = t.grad
        grad = "none" if g is None else (g, g.detach().clone(memory_format=torch.contiguous_format))
    meta = (t.stride(), t.storage_offset(), t.device, t.requires_grad)
    return (tuple(t.shape), t.dtype, t.layout, meta, _storage(t), data, grad, None)


def _index(shape, flat: int) -> list[int]:
    where = []
    for n in reversed(shape):
        where.append(flat % n if n else 0)
        flat //= n if n else 1
    return where[::-1]


def _value_change(old: torch.Tensor, new: torch.Tensor) -> str | None:
    if old.shape != new.shape or old.dtype != new.dtype:
        return f"shape {tuple(old.shape)} {old.dtype} -> {tuple(new.shape)} {new.dtype}"
    new = new.detach()
    if not new.numel() or torch.equal(_bits(old), _bits(new.contiguous())):
        return None
    a, b = old.reshape(-1), new.reshape(-1)
    same = a == b
    if a.is_floating_point() or a.is_complex():
        same |= a.isnan() & b.isnan()
    flat = int((~same).nonzero()[0, 0]) if not bool(same.all()) else 0
    where = _index(tuple(old.shape), flat)
    at = f"element {where}" if where else "its value"
    return f"{at}: {_show(a[flat].item())} -> {_show(b[flat].item())}"


def _tensor_change(t: torch.Tensor, saved, grad_ok: bool = False) -> str | None:
    shape, dtype, layout, meta, storage, data, grad, _ = saved
    if (tuple(t.shape), t.dtype, t.layout) != (shape, dtype, layout):
        return f"shape {shape} {dtype} -> {tuple(t.shape)} {t.dtype}"
    if meta is None:
        return None
    stride, offset, device, requires_grad = meta
    if t.device != device:
        return f"device {device} -> {t.device}"
    if t.requires_grad != requires_grad:
        return f"requires_grad {requires_grad} -> {t.requires_grad}"
    if (t.stride(), t.storage_offset()) != (stride, offset) or _storage(t) != storage:
        return "it now views other memory or another layout (set_, resize_, as_strided_, t_)"
    change = _value_change(data, t)
    if change:
        return change
    if grad is not None and not grad_ok:
        g = t.grad
        if grad == "none":
            return None if g is None else "its .grad: None -> a tensor (a backward pass reached it)"
        if g is None:
            return "its .grad was cleared"
        if g is not grad[0]:
            return "its .grad was replaced by another tensor"
        change = _value_change(grad[1], g)
        if change:
            return f"its .grad, {change} (a backward pass reached it)"
    return None


# ---- what the caller owns ------------------------------------------------------------------


def _modes(m: torch.nn.Module):
    return [(name, id(sub), sub.training) for name, sub in m.named_modules(remove_duplicate=False)]


def _optimizer_settings(opt) -> list:
    groups = [
        ([id(p) for p in g.get("params", ())], {k: v for k, v in g.items() if k != "params"})
        for g in opt.param_groups
    ]
    return groups + [([id(p) for p in opt.state], {"state": len(opt.state)})]


class Owned:
    """Everything mutable the caller passed in, saved before the call: ``changes()``
    after it says what is different, ``memory`` and ``objects`` are what a result must
    not share (``{where: ...}`` by memory range and by identity)."""

    def __init__(self, named: list[tuple[str, object]]) -> None:
        self.items: list[tuple[str, str, object, object]] = []
        self.objects: dict[int, str] = {}
        self.memory: list[tuple[tuple, str]] = []
        self.paths: list[Path] = []
        self.keep: list = []  # what ids were taken of stays alive
        for name, value in named:
            self._walk(value, f"`{name}`", 0)

    def _note(self, kind: str, x, where: str, state) -> None:
        self.items.append((kind, where, x, state))

    def _walk(self, x, where: str, depth: int) -> None:
        if isinstance(x, str):
            if depth == 0 and len(x) < 4096 and "\n" not in x and "\0" not in x:
                self.paths.append(Path(x))  # an argument that may be a path given as text
            return
        if depth > MAX_DEPTH or len(self.items) > MAX_NODES or type(x) in _IMMUTABLE:
            return
        if isinstance(x, os.PathLike):
            self.paths.append(Path(os.fspath(x)))
            return
        if id(x) in self.objects:
            return
        self.objects[id(x)] = where
        self.keep.append(x)
        if isinstance(x, torch.Tensor):
            self._tensor(x, where)
        elif isinstance(x, np.ndarray):
            self._note("array", x, where, (x.shape, x.dtype, x.strides, x.copy()))
            if x.nbytes:
                lo, hi = _byte_bounds(x)
                self.memory.append((("cpu", lo, hi), where))
        elif isinstance(x, list):
            self._note("list", x, where, list(x))
            for i, v in enumerate(list(x)):
                self._walk(v, f"{where}[{i}]", depth + 1)
        elif isinstance(x, tuple):
            for i, v in enumerate(tuple(x)):
                self._walk(v, f"{where}[{i}]", depth + 1)
        elif isinstance(x, dict):
            self._note("dict", x, where, list(x.items()))
            for k, v in list(x.items()):
                self._walk(v, f"{where}[{k!r}]", depth + 1)
        elif isinstance(x, set | bytearray):
            self._note("copy", x, where, x.copy())
        elif isinstance(x, torch.nn.Module):
            self._module(x, where)
        elif isinstance(x, torch.optim.Optimizer):
            self._note("optimizer", x, where, _optimizer_settings(x))
            for i, st in enumerate(list(x.state.values())):
                for k, v in list(st.items()):
                    self._walk(v, f"{where}.state[{i}][{k!r}]", depth + 1)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            fields = [(f.name, getattr(x, f.name, None)) for f in dataclasses.fields(x)]
            self._note("fields", x, where, fields)
            for name, v in fields:
                self._walk(v, f"{where}.{name}", depth + 1)

    def _module(self, m: torch.nn.Module, where: str) -> None:
        params = list(m.named_parameters(remove_duplicate=False))
        buffers = list(m.named_buffers(remove_duplicate=False))
        layout = ([(n, id(p)) for n, p in params], [(n, id(b)) for n, b in buffers])
        self._note("module", m, where, (_modes(m), layout))
        for name, t in params + buffers:
            if id(t) not in self.objects:
                self.objects[id(t)] = f"{where}'s {name}"
                self._tensor(t, f"{where}'s {name}")

    def _tensor(self, t: torch.Tensor, where: str) -> None:
        state = _tensor_state(t)
        self._note("tensor", t, where, state)
        if state[4] is not None:
            self.memory.append((state[4], where))
        if isinstance(state[6], tuple) and _storage(state[6][0]) is not None:
            self.memory.append((_storage(state[6][0]), f"{where}.grad"))

    def changes(self, allowed: frozenset[str]) -> tuple[str, str] | None:
        """``(where, what changed)`` of the first thing that changed (None if nothing),
        leaving alone the parameters ``allowed`` names (declared in-place)."""
        for kind, where, x, saved in self.items:
            param = where.split("`")[1]
            if param in allowed:
                continue
            if kind == "tensor":
                change = _tensor_change(x, saved, grad_ok=f"{param}.grad" in allowed)
            else:
                change = _CHANGE[kind](x, saved)
            if change:
                return where, change
        return None


def _list_change(x, saved) -> str | None:
    now = list(x)
    if list(map(id, now)) == list(map(id, saved)):
        return None
    if len(now) != len(saved):
        return f"length {len(saved)} -> {len(now)}"
    for i, (a, b) in enumerate(zip(saved, now)):
        if a is not b and not _same_immutable(a, b):
            return f"element {i}: {_show(a)} -> {_show(b)}"
    return None


def _dict_change(x, saved) -> str | None:
    now = list(x.items())
    if [k for k, _ in now] != [k for k, _ in saved]:
        gone = [k for k, _ in saved if k not in x]
        new = [k for k, _ in now if k not in dict(saved)]
        if gone or new:
            return f"keys removed {gone[:3]}, added {new[:3]}"
        return "the order of its keys"
    for (k, a), (_, b) in zip(saved, now):
        if a is not b and not _same_immutable(a, b):
            return f"[{k!r}]: {_show(a)} -> {_show(b)}"
    return None


def _module_change(m, saved) -> str | None:
    modes, (params, buffers) = saved
    now = _modes(m)
    if [(n, i) for n, i, _ in now] != [(n, i) for n, i, _ in modes]:
        return "its submodules were added, removed or replaced"
    for (name, _, was), (_, _, mode) in zip(modes, now):
        if was != mode:
            word = {True: "training", False: "evaluation"}
            return f"{name or 'the module'} switched from {word[was]} to {word[mode]} mode"
    p = [(n, id(t)) for n, t in m.named_parameters(remove_duplicate=False)]
    b = [(n, id(t)) for n, t in m.named_buffers(remove_duplicate=False)]
    if p != params:
        return "its parameters were added, removed or replaced"
    if b != buffers:
        return "its buffers were added, removed or replaced"
    return None


def _optimizer_change(opt, saved) -> str | None:
    now = _optimizer_settings(opt)
    if [ids for ids, _ in now[:-1]] != [ids for ids, _ in saved[:-1]]:
        return "its parameter groups were changed"
    if now[-1] != saved[-1]:
        return "its state changed (a step was taken)"
    for i, ((_, a), (_, b)) in enumerate(zip(saved[:-1], now[:-1])):
        for k in set(a) | set(b):
            x, y = a.get(k), b.get(k)
            if x is not y and not _same_immutable(x, y):
                return f"param_groups[{i}][{k!r}]: {_show(x)} -> {_show(y)}"
    return None


def _fields_change(x, saved) -> str | None:
    for name, was in saved:
        now = getattr(x, name, None)
        if now is not was and not _same_immutable(was, now):
            return f".{name}: {_show(was)} -> {_show(now)}"
    return None


def _array_change(x, saved) -> str | None:
    shape, dtype, strides, data = saved
    if (x.shape, x.dtype, x.strides) != (shape, dtype, strides):
        return f"shape {shape} {dtype} -> {x.shape} {x.dtype}"
    if np.array_equal(x, data, equal_nan=x.dtype.kind in "fc"):
        return None
    flat = int(np.flatnonzero(~((x == data) | (x != x) & (data != data)))[0])
    return f"element {_index(shape, flat)}: {_show(data.flat[flat].item())} -> {_show(x.flat[flat].item())}"


_CHANGE = {
    "tensor": _tensor_change,
    "array": _array_change,
    "list": _list_change,
    "dict": _dict_change,
    "copy": lambda x, saved: None if x == saved else f"{_show(saved)} -> {_show(x)}",
    "module": _module_change,
    "optimizer": _optimizer_change,
    "fields": _fields_change,
}


# ---- what a result holds ---------------------------------------------------------------------


def reachable(result, limit: int = MAX_NODES):
    """``(where, object)`` for each mutable object the result holds (tensors, arrays,
    lists, dicts, sets, modules), ``where`` as ``result[0].w``."""
    seen: set[int] = set()
    todo = [(result, "the result", 0)]
    while todo and len(seen) < limit:
        x, where, depth = todo.pop()
        if type(x) in _IMMUTABLE or isinstance(x, str | os.PathLike) or depth > MAX_DEPTH:
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, torch.Tensor | np.ndarray):
            yield where, x
        elif isinstance(x, torch.nn.Module):
            yield where, x
            for name, t in list(x.named_parameters()) + list(x.named_buffers()):
                todo.append((t, f"{where}'s {name}", depth + 1))
        elif isinstance(x, list | dict | set | bytearray):
            yield where, x
            items = list(x.items()) if isinstance(x, dict) else enumerate(list(x))
            if not isinstance(x, set | bytearray):
                for k, v in items:
                    todo.append((v, f"{where}[{k!r}]", depth + 1))
        elif isinstance(x, tuple):
            fields = getattr(type(x), "_fields", None)
            for i, v in enumerate(tuple(x)):
                name = f".{fields[i]}" if fields and i < len(fields) else f"[{i}]"
                todo.append((v, f"{where}{name}", depth + 1))
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            for f in dataclasses.fields(x):
                todo.append((getattr(x, f.name, None), f"{where}.{f.name}", depth + 1))


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """The first and one-past-last byte addresses ``a`` covers."""
    lo = hi = a.__array_interface__["data"][0]
    for n, step in zip(a.shape, a.strides):
        if n:
            lo, hi = lo + min(0, (n - 1) * step), hi + max(0, (n - 1) * step)
    return lo, hi + a.itemsize


def _memory(x) -> tuple | None:
    if isinstance(x, torch.Tensor):
        return _storage(x)
    if isinstance(x, np.ndarray) and x.nbytes:
        lo, hi = _byte_bounds(x)
        return ("cpu", lo, hi)
    return None


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def shared_with(result, owned: Owned, allowed: frozenset[str]) -> tuple[str, str] | None:
    """``(where in the result, which argument)`` of the first object of the result that is,
    or shares memory with, something the caller passed in (except ``allowed`` parameters)."""
    for where, x in reachable(result):
        arg = owned.objects.get(id(x))
        if arg is not None and arg.split("`")[1] not in allowed:
            return where, arg
        mem = _memory(x)
        if mem is None:
            continue
        for span, arg in owned.memory:
            if arg.split("`")[1] not in allowed and _overlap(mem, span):
                return where, arg
    return None


class Handouts:
    """The last few results of each function, to tell a new result from one handed out
    before. Tensors and arrays are remembered by a weak reference to their memory, so a
    result the caller dropped (and whose memory was freed) cannot match; containers and
    modules by identity, as long as the caller or the function keeps them."""

    def __init__(self) -> None:
        self.kept: dict[str, deque] = {}

    def clear(self) -> None:
        self.kept.clear()

    def repeated(self, key: str, result, owned: Owned) -> str | None:
        """Where the result holds an object an earlier call returned (None if nowhere);
        then remember this result."""
        earlier = self.kept.setdefault(key, deque(maxlen=KEPT_RESULTS))
        mine, found = [], None
        for where, x in reachable(result):
            if id(x) in owned.objects:
                continue
            mem = _memory(x)
            if mem is not None and any(_overlap(mem, span) for span, _ in owned.memory):
                continue
            ref = _remember(x)
            if ref is None:
                continue
            mine.append(ref)
            if found is None and any(_same_as(x, mem, old) for old in _alive(earlier)):
                found = where
        earlier.append(mine)
        return found


def _remember(x):
    if isinstance(x, torch.Tensor):
        if _storage(x) is None:
            return None
        return ("memory", weakref.ref(x.untyped_storage()))
    if isinstance(x, np.ndarray):
        base = x
        while isinstance(base.base, np.ndarray):
            base = base.base
        return ("memory", weakref.ref(base)) if x.nbytes else None
    if isinstance(x, torch.nn.Module):
        return ("object", weakref.ref(x))
    return ("object", lambda x=x: x)  # a container: kept, so its id cannot be reused


def _alive(earlier):
    for refs in earlier:
        for kind, ref in refs:
            obj = ref()
            if obj is not None:
                yield kind, obj


def _same_as(x, mem, old) -> bool:
    kind, obj = old
    if kind == "object":
        return obj is x
    if mem is None:
        return False
    if isinstance(obj, np.ndarray):
        lo, hi = _byte_bounds(obj)
        return _overlap(mem, ("cpu", lo, hi))
    if obj.nbytes() == 0:
        return False
    return _overlap(mem, (obj.device.type, obj.data_ptr(), obj.data_ptr() + obj.nbytes()))


HANDOUTS = Handouts()


# ---- global state --------------------------------------------------------------------------


def _pyplot():
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None:
        return (), None
    gcf = helpers.Gcf
    active = gcf.get_active()
    content = None
    if active is not None:
        fig = active.canvas.figure
        content = (
            id(fig),
            [
                (
                    len(ax.lines),
                    len(ax.patches),
                    len(ax.collections),
                    len(ax.images),
                    len(ax.texts),
                    ax.get_title(),
                    ax.get_xlabel(),
                    ax.get_ylabel(),
                    ax.get_yscale(),
                )
                for ax in fig.axes
            ],
        )
    return tuple(gcf.figs), content


def _close_new_figures(was) -> None:
    """Close the figures a call left open (those it closed or drew on stay as they are)."""
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is not None:
        for num in set(helpers.Gcf.figs) - set(was[0]):
            helpers.Gcf.destroy(num)


_RC_SKIPPED = {"backend", "backend_fallback"}  # matplotlib.use("Agg") in a headless run


def _rc_params():
    mpl = sys.modules.get("matplotlib")
    rc = getattr(mpl, "rcParams", None)
    if not isinstance(rc, dict):
        return None
    return {k: v for k, v in dict.items(rc) if k not in _RC_SKIPPED}


_SYSTEM_FILES = ("/dev/", "/proc/", "/sys/", sys.prefix + "/", sys.base_prefix + "/")


def _open_files():
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    found = {}
    for fd in fds:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if path.startswith("/") and not path.startswith(_SYSTEM_FILES):
            found[fd] = path
    return found


_LIBRARY_ENVIRONMENT = (b"TORCHINDUCTOR_", b"TRITON_")


def _environment():
    """The environment, less what torch sets for itself on first use of its compiler."""
    env = getattr(os.environ, "_data", None)
    if env is None:
        env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    return {k: v for k, v in env.items() if not k.startswith(_LIBRARY_ENVIRONMENT)}


# name -> (read, put back or None, group a contract may allow)
STATE = {
    "torch's global random state": (
        torch.random.get_rng_state,
        torch.random.set_rng_state,
        "random",
    ),
    "numpy's global random state": (np.random.get_state, np.random.set_state, "random"),
    "Python's global random state": (random.getstate, random.setstate, "random"),
    "grad mode": (torch.is_grad_enabled, torch.set_grad_enabled, "grad_mode"),
    "inference mode": (torch.is_inference_mode_enabled, None, "grad_mode"),
    "anomaly detection": (torch.is_anomaly_enabled, torch.set_anomaly_enabled, "modes"),
    "the default dtype": (torch.get_default_dtype, torch.set_default_dtype, "modes"),
    "deterministic algorithms": (
        torch.are_deterministic_algorithms_enabled,
        torch.use_deterministic_algorithms,
        "modes",
    ),
    "torch's thread count": (torch.get_num_threads, torch.set_num_threads, "threads"),
    "float32 matmul precision": (
        torch.get_float32_matmul_precision,
        torch.set_float32_matmul_precision,
        "modes",
    ),
    "the working directory": (os.getcwd, os.chdir, "cwd"),
    "the environment": (_environment, None, "environment"),
    "pyplot's figures": (_pyplot, _close_new_figures, "pyplot"),
    "matplotlib's rcParams": (_rc_params, None, "pyplot"),
    "open files": (_open_files, None, "files"),
}

WHY = {
    "random": "a call must neither seed nor draw from the global generators unless its contract "
    "says so: use a torch.Generator (or numpy Generator) of its own, or the one it is given",
    "grad_mode": "use `with torch.no_grad():` (or the decorator) so the mode is put back",
    "modes": "a library-wide setting changed inside a call changes every later computation: "
    "put it back before returning",
    "threads": "a library-wide setting changed inside a call changes every later computation",
    "cwd": "use paths instead of changing directory",
    "environment": "the environment belongs to the whole process",
    "pyplot": "draw on a figure of your own (fig, ax = plt.subplots()), save it, "
    "plt.close(fig): pyplot's current figure belongs to the caller",
    "files": "close every file you open (`with open(...)`)",
}


def _equal_state(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(_equal_state(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def global_state() -> dict:
    return {name: read() for name, (read, _, _) in STATE.items()}


def _state_detail(name: str, before, after) -> str:
    if name == "pyplot's figures":
        (figs, content), (figs2, content2) = before or ((), None), after or ((), None)
        if set(figs2) - set(figs):
            return f"it left figure(s) {sorted(set(figs2) - set(figs))} open"
        if set(figs) - set(figs2):
            return f"it closed the caller's figure(s) {sorted(set(figs) - set(figs2))}"
        if content != content2:
            return "it drew into the caller's current figure"
        return "it changed which figure is current"
    if name == "open files":
        new = sorted(set((after or {}).values()) - set((before or {}).values()))
        return f"it left {', '.join(new[:2]) or 'a file'} open"
    if name in ("matplotlib's rcParams", "the environment"):
        keys = sorted(
            k
            for k in set(before or {}) | set(after or {})
            if (before or {}).get(k) != (after or {}).get(k)
        )
        return f"{', '.join(map(str, keys[:3]))} changed"
    if isinstance(before, bool | int | float | str | torch.dtype):
        return f"{before} -> {after}"
    return "it is not what it was"


def state_changes(before: dict, allowed: frozenset[str]) -> list[tuple[str, str, str]]:
    """``(name, detail, why)`` for each global state that differs from ``before``, put
    back where possible, except the groups ``allowed``."""
    found = []
    for name, (read, put_back, group) in STATE.items():
        if group in allowed:
            continue
        was, now = before[name], read()
        if was is None:  # not there to look at before (matplotlib not imported yet)
            continue
        if name == "open files" and was is not None and now is not None:
            if not set(now.values()) - set(was.values()):
                continue
        elif _equal_state(was, now):
            continue
        found.append((name, _state_detail(name, was, now), WHY[group] if group in WHY else ""))
        if put_back is not None:
            try:
                put_back(was)
            except Exception:  # noqa: BLE001 - put back what can be
                pass
    return found


# ---- files ---------------------------------------------------------------------------------


def _listing(folder: Path) -> dict[str, tuple]:
    """``{name: stamp}`` of a folder's entries (dot-names aside): a file by inode, time
    and size, a folder by its inode alone (what others write inside it is not ours)."""
    found = {}
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.startswith("."):
                    continue
                st = e.stat(follow_symlinks=False)
                found[e.name] = (
                    (st.st_ino,) if e.is_dir() else (st.st_ino, st.st_mtime_ns, st.st_size)
                )
    except OSError:
        pass
    return found


def watched_folders(paths: list[Path]) -> dict[Path, dict]:
    """The working directory and the folder of each path the call was given (not a
    folder it was given itself: what it writes inside is its own business)."""
    folders = {Path.cwd()}
    for p in paths:
        full = p if p.is_absolute() else Path.cwd() / p
        try:
            if not full.is_dir() and full.parent.is_dir():
                folders.add(full.parent)
        except (OSError, ValueError):  # text that only looks like a path
            pass
    return {f: _listing(f) for f in folders}


# What libraries make in the working directory when it is the temporary folder (as in the
# grader's sandbox): multiprocessing's, the compiler's, matplotlib's and tempfile's own.
_LIBRARY_FILES = (
    "pymp-",
    "torchinductor_",
    "triton",
    "tmp",
    "matplotlib-",
    "torch_",
    "__pycache__",
)


def written(before: dict[Path, dict], paths: list[Path]) -> tuple[Path, str] | None:
    """A file created in a watched folder, or changed beside a path given, other than a
    path given. In the working directory only new names count, and not the libraries'
    own: other programs (an editor, a loader's workers) may write there meanwhile."""
    cwd = Path.cwd()
    given = {(p if p.is_absolute() else cwd / p) for p in paths}
    for folder, was in before.items():
        for name, stamp in _listing(folder).items():
            if folder / name in given or was.get(name) == stamp:
                continue
            if folder != cwd or (name not in was and not name.startswith(_LIBRARY_FILES)):
                return folder, name
    return None


# ---- the checked call ------------------------------------------------------------------------

_signatures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _signature(fn) -> inspect.Signature | None:
    try:
        return _signatures[fn]
    except (KeyError, TypeError):
        pass
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    with contextlib.suppress(TypeError):  # not weakly referable: looked up each time
        _signatures[fn] = sig
    return sig


def _named(fn, args: tuple, kwargs: dict) -> list[tuple[str, object]]:
    sig = _signature(fn)
    if sig is not None:
        try:
            return list(sig.bind(*args, **kwargs).arguments.items())
        except TypeError:
            pass
    return [(f"argument {i + 1}", v) for i, v in enumerate(args)] + list(kwargs.items())


def _call_text(name: str, named: list[tuple[str, object]]) -> str:
    return f"{name}({', '.join(n for n, _ in named if n != 'self')})"


def _fail(text: str, cause: BaseException | None = None) -> Broken:
    err = Broken(text)
    _pending.append(err)
    return err


class Checked:
    """A student's function as the tests call it: the call itself, then the invariants.
    Pickles as the function (a DataLoader worker started by spawn gets the function)."""

    def __init__(self, fn, chapter: str, name: str) -> None:
        self.__wrapped__ = fn
        self._key = f"{chapter}.{name}"
        self._name = name
        self._allow = contracts.allowed(chapter, name)

    def __call__(self, *args, **kwargs):
        return call(self.__wrapped__, self._key, self._name, self._allow, args, kwargs)

    def __getattr__(self, attr: str):
        return getattr(self.__wrapped__, attr)

    def __reduce__(self):
        return (_unwrapped, (self.__wrapped__,))

    def __repr__(self) -> str:
        return f"<checked {self.__wrapped__!r}>"


def _unwrapped(fn):
    return fn


def checked(value, chapter: str, name: str):
    """``value`` as the tests reach it: a function (anything callable but a class) is
    called through the invariants; a class of the student's module has its public
    methods (and ``forward``) checked, for every instance; any other value is as is."""
    if isinstance(value, type):
        if value.__module__ == f"{chapter}.{_module_of(value)}":
            _instrument(value, chapter)
        return value
    if callable(value) and not isinstance(value, Checked):
        return Checked(value, chapter, name)
    return value


def _module_of(cls) -> str:
    return cls.__module__.rpartition(".")[2]


_MARK = "_course_invariants_checked"


def _instrument(cls: type, chapter: str) -> None:
    """Check every call of ``cls``'s public methods made from outside the student's code
    (a method a method calls is not checked again). ``self`` is the method's own: only
    its other arguments must stay unchanged. A module's ``forward`` may draw random
    numbers (dropout)."""
    if cls.__dict__.get(_MARK) or not contracts.allowed(chapter, cls.__name__).methods:
        return
    for attr, value in list(vars(cls).items()):
        if attr.startswith("_") or not isinstance(value, types.FunctionType):
            continue
        allow = contracts.allowed(chapter, f"{cls.__name__}.{attr}")
        if attr == "forward" and issubclass(cls, torch.nn.Module):
            allow = dataclasses.replace(allow, state=allow.state | {"random"})
        setattr(cls, attr, _method(value, f"{chapter}.{cls.__name__}.{attr}", allow))
    setattr(cls, _MARK, True)


def _method(fn, key: str, allow: contracts.Allow):
    name = key.partition(".")[2]

    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        if _active[0] or torch.compiler.is_compiling():
            return fn(self, *args, **kwargs)
        return call(fn, key, name, allow, (self, *args), kwargs)

    return method


def _in_worker() -> bool:
    data = sys.modules.get("torch.utils.data")
    info = getattr(data, "get_worker_info", None)
    return info is not None and info() is not None


@contextlib.contextmanager
def _unseen():
    """The checks' own torch calls, out of sight of the torch function and dispatch modes
    a probe may have set up to watch the student's calls."""
    from torch.utils._python_dispatch import _disable_current_modes

    with torch._C.DisableTorchFunction(), _disable_current_modes():
        yield


_active = [0]  # > 0 while a checked call runs: the calls it makes are its own business


def call(fn, key: str, name: str, allow: contracts.Allow, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` with every invariant checked (see module doc)."""
    if _active[0]:
        return fn(*args, **kwargs)
    _active[0] += 1
    try:
        return _checked_call(fn, key, name, allow, args, kwargs)
    finally:
        _active[0] -= 1


def _checked_call(fn, key, name, allow, args, kwargs):
    with _unseen():
        named = _named(fn, args, kwargs)
        owned = Owned([(n, v) for n, v in named if n != "self"])
        state = global_state()
        # a DataLoader worker shares the folders with its siblings: files are the main
        # process's to check
        folders = {} if _in_worker() else watched_folders(owned.paths)
    states = allow.state
    if allow.generator and dict(named).get(allow.generator) is not None:
        states = states - {"random"}  # given a generator, it draws from that one only
    try:
        result = fn(*args, **kwargs)
    except (NotImplementedError, Broken):
        raise
    except BaseException:
        with _unseen():  # its own error is the report; put back what it left behind
            state_changes(state, states)
        raise
    with _unseen():
        return _after(key, name, allow, states, named, owned, state, folders, result)


def _after(key, name, allow, states, named, owned, state, folders, result):
    text = _call_text(name, named)
    changed = state_changes(state, states)
    if changed:
        what, detail, why = changed[0]
        raise _fail(
            f"{text} changed {what} ({detail}) and did not put it back: {why} "
            "(invariant: global state unchanged)"
        )
    change = owned.changes(allow.changes)
    if change:
        where, what = change
        raise _fail(
            f"{text} changed its argument {where} ({what}): a function that only reads its "
            "input must not write to it (invariant: arguments unchanged)"
        )
    wrote = written(folders, owned.paths)
    if wrote:
        folder, file = wrote
        given = ", ".join(str(p) for p in owned.paths) or "no path"
        raise _fail(
            f"{text} wrote {file!r} in {folder}, which it was not given (it was given "
            f"{given}): write exactly the path you are given, nowhere else "
            "(invariant: writes only where told)"
        )
    shared = shared_with(result, owned, allow.aliases)
    if shared:
        where, arg = shared
        raise _fail(
            f"{text} returned {where}, which is (or shares memory with) its argument {arg}: "
            "editing the result would change the caller's data; return objects of your own "
            "(.clone(), list(...)) (invariant: results are the call's own)"
        )
    if not allow.repeats:
        again = HANDOUTS.repeated(key, result, owned)
        if again:
            raise _fail(
                f"{text} returned {again}, which an earlier call also returned (the same "
                "object or memory): editing one call's result changes another's; build a "
                "new one on every call (invariant: results are the call's own)"
            )
    return result
