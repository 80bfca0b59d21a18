"""What a call into the student's code owes its caller: the arguments as they were, and
results of its own (``harness.invariants`` calls these before and after each call).

``Owned`` saves everything mutable the caller passed in (tensors by value and metadata and
``.grad``, lists, dicts, sets, numpy arrays, modules' parameters, buffers, submodules and
train/eval modes, optimizers' settings and state, dataclasses) and says afterwards what
changed; ``shared_with`` finds a result that is, or shares memory with, an argument;
``Handouts`` remembers earlier results to find one handed out twice (a cache).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import os
import weakref
from collections import deque
from pathlib import Path

import numpy as np
import torch

MAX_NODES = 20_000  # objects of one argument or result looked at: beyond any course value
MAX_DEPTH = 8
KEPT_RESULTS = 4  # earlier results per function compared with a new one
IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device)


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
    if type(a) is not type(b) or not isinstance(a, IMMUTABLE + (tuple, frozenset)):
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


def _tensor_change(
    t: torch.Tensor, saved, grad_ok: bool = False, values_ok: bool = False
) -> str | None:
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
    change = None if values_ok else _value_change(data, t)
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


HOOKS = {  # a module's own hook tables, and what each hook runs around
    "_forward_pre_hooks": "forward pre-",
    "_forward_hooks": "forward ",
    "_backward_pre_hooks": "backward pre-",
    "_backward_hooks": "backward ",
}


def _behaviour(m: torch.nn.Module):
    """Per submodule, what makes it compute other than its class says: compiled in place
    (``nn.Module.compile``), ``forward`` or ``__call__`` set on the instance, and how many
    hooks of each kind it holds."""
    found = []
    for name, sub in m.named_modules(remove_duplicate=False):
        own = vars(sub)
        found.append(
            (
                name,
                own.get("_compiled_call_impl") is not None,
                tuple(k for k in ("forward", "__call__") if k in own),
                tuple(len(own.get(table) or ()) for table in HOOKS),
                _settings(own),
            )
        )
    return found


def _settings(own: dict) -> dict:
    """A module's public settings of immutable kinds (``stride``, ``eps``, ``momentum``,
    ``causal`` ...): what its constructor was told, which its forward reads."""
    return {
        k: v
        for k, v in own.items()
        if not k.startswith("_") and k != "training" and _same_immutable(v, v)
    }


def _settings_change(was: dict, now: dict) -> tuple[str, str] | None:
    """(the change shown, the setting) of the first setting added, removed or changed."""
    for k in sorted(was.keys() | now.keys()):
        if k not in now or k not in was or not _same_immutable(was[k], now[k]):
            return f"{_show(was.get(k, '(none)'))} -> {_show(now.get(k, '(none)'))}", k
    return None


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
        self._spans: Spans | None = None

    def spans(self) -> Spans:
        """``memory`` indexed for overlap questions (built on first use)."""
        if self._spans is None:
            self._spans = Spans(span for span, _ in self.memory)
        return self._spans

    def _note(self, kind: str, x, where: str, state) -> None:
        self.items.append((kind, where, x, state))

    def _walk(self, x, where: str, depth: int) -> None:
        if isinstance(x, str):
            if depth == 0 and len(x) < 4096 and "\n" not in x and "\0" not in x:
                self.paths.append(Path(x))  # an argument that may be a path given as text
            return
        if depth > MAX_DEPTH or len(self.items) > MAX_NODES or type(x) in IMMUTABLE:
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
        self._note("module", m, where, (_modes(m), layout, _behaviour(m)))
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

    def changes(self, allowed: frozenset[str]) -> tuple[str, str, str] | None:
        """``(parameter, where, what changed)`` of the first thing that changed (None if
        nothing), leaving alone what ``allowed`` names (declared in-place)."""
        for kind, where, x, saved in self.items:
            param = where.split("`")[1]
            if param in allowed:
                continue
            if kind == "tensor":
                change = _tensor_change(
                    x,
                    saved,
                    grad_ok=f"{param}.grad" in allowed,
                    values_ok=f"{param}.values" in allowed,
                )
            else:
                change = _CHANGE[kind](x, saved)
            if change:
                return param, where, change
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
    modes, (params, buffers), behaviour = saved
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
    for (name, compiled, own, hooks, settings), (_, compiled_now, own_now, hooks_now, now) in zip(
        behaviour, _behaviour(m)
    ):
        name = name or "the module"
        changed = _settings_change(settings, now)
        if changed:
            values, key = changed
            return f"{name}'s setting {key!r} changed: {values}"
        if compiled_now and not compiled:
            return (
                f"{name} was compiled in place (nn.Module.compile), so every later call of "
                "the caller's module runs through torch.compile; compile a wrapper of your "
                "own (torch.compile(model)) and leave the caller's module as it was"
            )
        if own_now != own:
            return f"{name} had {' and '.join(own_now or own)} set on the instance"
        for kind, was, now in zip(HOOKS.values(), hooks, hooks_now):
            if now > was:
                return (
                    f"{name} was left holding {now - was} more {kind}hook(s): remove each "
                    "hook you register (handle.remove(), in a finally) before returning"
                )
            if now < was:
                return f"{name} lost {was - now} of the {kind}hooks the caller had registered"
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
        if type(x) in IMMUTABLE or isinstance(x, str | os.PathLike) or depth > MAX_DEPTH:
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


class Spans:
    """Memory ranges ``(device, start, end)``, asked whether any overlaps a given one in
    O(log n): a result with thousands of tensors is checked against thousands of ranges
    on every probed call, so a pairwise scan would cost more than the call."""

    def __init__(self, spans) -> None:
        by_device: dict[str, list[tuple[int, int]]] = {}
        for device, lo, hi in spans:
            if hi <= lo:
                continue  # an empty range holds nothing to share
            by_device.setdefault(device, []).append((lo, hi))
        self._starts: dict[str, list[int]] = {}
        self._reach: dict[str, list[int]] = {}  # the furthest end among the first k ranges
        for device, ranges in by_device.items():
            ranges.sort()
            self._starts[device] = [lo for lo, _ in ranges]
            self._reach[device] = list(itertools.accumulate((hi for _, hi in ranges), max))

    def overlaps(self, span: tuple) -> bool:
        device, lo, hi = span
        starts = self._starts.get(device)
        if not starts:
            return False
        k = bisect.bisect_left(starts, hi)  # the ranges that start before this one ends
        return k > 0 and self._reach[device][k - 1] > lo


def shared_with(result, owned: Owned, allowed: frozenset[str]) -> tuple[str, str] | None:
    """``(where in the result, which argument)`` of the first object of the result that is,
    or shares memory with, something the caller passed in (except ``allowed`` parameters)."""
    for where, x in reachable(result):
        arg = owned.objects.get(id(x))
        if arg is not None and arg.split("`")[1] not in allowed:
            return where, arg
        mem = _memory(x)
        if mem is None or not owned.spans().overlaps(mem):
            continue
        for span, arg in owned.memory:  # which argument, in the order they were walked
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
        alive = list(_alive(earlier))  # held here, so an id below stays its object's
        handed_out = {id(obj) for kind, obj in alive if kind == "object"}
        memory = Spans(_span_of(obj) for kind, obj in alive if kind == "memory")
        mine, found = [], None
        for where, x in reachable(result):
            if id(x) in owned.objects:
                continue
            mem = _memory(x)
            if mem is not None and owned.spans().overlaps(mem):
                continue
            ref = _remember(x)
            if ref is None:
                continue
            mine.append(ref)
            if found is None and (
                id(x) in handed_out or (mem is not None and memory.overlaps(mem))
            ):
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


def _span_of(memory) -> tuple:
    """The range a remembered array or storage covers (empty ones cover nothing)."""
    if isinstance(memory, np.ndarray):
        lo, hi = _byte_bounds(memory)
        return ("cpu", lo, hi)
    return (memory.device.type, memory.data_ptr(), memory.data_ptr() + memory.nbytes())


HANDOUTS = Handouts()
