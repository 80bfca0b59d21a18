"""Every value of a parameter's declared type is accepted, not only the kind the examples use.

A stub's annotations are the contract's input domain (``harness/declared.py`` holds them,
written from the stubs). A test passes ``[2, 3]`` where ``Sequence[int]`` is declared,
``0.5`` where ``float`` is, a ``dict`` where ``Mapping`` is; a student's code that only
works for that kind (``a + [1]``, ``lr.is_integer()``, ``m.copy()``, walking an iterable
twice) is wrong for the rest of the domain. ``variants(key, args, kwargs, names)`` gives
the same call with one argument at a time given as another member of its declared type:

- ``float``: a whole float as an int and an int as a float (an int is a float, PEP 484);
- ``Sequence``: a tuple for a list, a list for a tuple or a ``torch.Size``;
- ``Mapping``: a read-only mapping (``types.MappingProxyType``) for a dict;
- ``Iterable``: an iterator over the same items, which can be walked once;
- ``int | tuple[int, int]``: ``(k, k)`` for ``k``, and ``k`` for ``(k, k)``;
- ``str | Path``, ``str | torch.device``: the other spelling of the same path or device.

Elements follow their declared types too (the whole floats of a ``list[float]``). The
harness makes each variant call once per input signature and compares its result with
the first call's (``harness.invariants``); an int and a float of the same value count as
the same result.
"""

from __future__ import annotations

import ast
import types
from functools import cache
from pathlib import Path, PurePath
from typing import NamedTuple

import torch

_EXACT = 2**53  # floats up to here hold every whole number exactly


class Retyped(NamedTuple):
    """A call with one argument given as another member of its declared type: ``where``
    names the argument, what it was given as, and the declared type."""

    args: tuple
    kwargs: dict
    where: str


def variants(key: str, args: tuple, kwargs: dict, names) -> list[Retyped]:
    """The calls to make again for ``key`` (``chNN.name`` or ``chNN.Class.method``), one per
    argument that has another member of its declared type to be given as (see module doc);
    ``args`` without the method's object; ``names`` the parameters, in order."""
    declared = _annotations(key)
    if not declared:
        return []
    found = []
    given = [(i, names[i] if i < len(names) else None, v) for i, v in enumerate(args)]
    given += [(k, k, v) for k, v in kwargs.items()]
    for slot, name, value in given:
        text = declared.get(name) if name else None
        if text is None:
            continue
        node = _parse(text)
        for mode in ("container", "numbers"):
            changed = _retype(value, node, mode)
            if changed is None:
                continue
            new, how = changed
            new_args, new_kwargs = list(args), dict(kwargs)
            if isinstance(slot, int):
                new_args[slot] = new
            else:
                new_kwargs[slot] = new
            where = f"`{name}` given {how} (its declared type is `{text}`)"
            found.append(Retyped(tuple(new_args), new_kwargs, where))
    return found


def _annotations(key: str) -> dict[str, str]:
    from harness import declared

    chapter, _, name = key.partition(".")
    return declared.ANNOTATIONS.get(chapter, {}).get(name, {})


@cache
def _parse(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _members(node: ast.expr) -> list[ast.expr]:
    """The members of a union (``a | b``, ``Optional[a]``, ``Union[a, b]``), else ``[node]``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _members(node.left) + _members(node.right)
    if isinstance(node, ast.Subscript) and _head(node) in ("Optional", "Union"):
        return [m for p in _params(node) for m in _members(p)]
    return [node]


def _head(node: ast.expr) -> str:
    """``Sequence`` of ``Sequence[int]``, ``torch.device`` of itself."""
    if isinstance(node, ast.Subscript):
        node = node.value
    text = ast.unparse(node)
    return text.rsplit(".", 1)[-1] if text.startswith(("typing.", "collections.abc.")) else text


def _params(node: ast.expr) -> list[ast.expr]:
    if not isinstance(node, ast.Subscript):
        return []
    inner = node.slice
    return list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]


def _is_number(v) -> bool:
    return type(v) in (int, float)


def _retype(value, node: ast.expr, mode: str):
    """``(new value, how it is given)`` where ``value``, of declared type ``node``, has
    another member to be given as in ``mode`` ("container": another kind of sequence,
    mapping, iterable, path or device; "numbers": whole floats as ints, ints as floats);
    None where it has none."""
    members = _members(node)
    heads = {_head(m) for m in members}
    if mode == "container":
        other = _other_spelling(value, members, heads)
        if other is not None:
            return other
    for member in members:
        found = _retype_as(value, member, mode)
        if found is not None:
            return found
    return None


def _other_spelling(value, members, heads):
    """An int for ``(k, k)`` and back, a path's or a device's other spelling."""
    if type(value) is int and "tuple" in heads:
        pair = next(m for m in members if _head(m) == "tuple")
        if [ast.unparse(p) for p in _params(pair)] == ["int", "int"]:
            return (value, value), f"as ({value}, {value}) instead of {value}"
    if type(value) is tuple and "int" in heads and len(value) == 2:
        if all(type(v) is int for v in value) and value[0] == value[1]:
            return value[0], f"as {value[0]} instead of {value!r}"
    if type(value) is str and "str" in heads and heads & {"Path", "os.PathLike"}:
        return Path(value), "as a Path instead of a str"
    if isinstance(value, PurePath) and "str" in heads:
        return str(value), "as a str instead of a Path"
    if "torch.device" in heads and "str" in heads:
        if type(value) is str:
            try:
                return torch.device(value), f"as torch.device({value!r}) instead of a str"
            except RuntimeError:
                return None
        if isinstance(value, torch.device):
            return str(value), f"as {str(value)!r} instead of a torch.device"
    return None


def _retype_as(value, member: ast.expr, mode: str):
    head, params = _head(member), _params(member)
    if head == "float" and mode == "numbers" and _is_number(value):
        if type(value) is int:
            return float(value), f"as {float(value)!r} instead of {value!r}"
        if value.is_integer() and abs(value) <= _EXACT:
            return int(value), f"as {int(value)!r} instead of {value!r}"
        return None
    if head in ("Sequence", "list", "Iterable") and type(value) in (list, tuple, torch.Size):
        if head == "list" and type(value) is not list:
            return None
        inner = _items(value, params[0] if params else None, mode)
        items, inner_how = inner if inner else (list(value), None)
        if mode == "numbers" or head == "list":
            return None if inner is None else (_same_kind(value, items), inner_how)
        was = type(value).__name__
        if head == "Iterable":
            new, how = iter(items), f"as an iterator (it can be walked once) instead of a {was}"
        elif type(value) is list:
            new, how = tuple(items), "as a tuple instead of a list"
        else:
            new, how = list(items), f"as a list instead of a {was}"
        return new, how if inner is None else f"{how}, {inner_how}"
    if head == "tuple" and type(value) is tuple:
        if len(params) == 2 and ast.unparse(params[1]) == "...":
            return _items(value, params[0], mode, tuple)
        if len(params) == len(value):
            return _items(value, params, mode, tuple)
        return None
    if head in ("Mapping", "dict") and type(value) is dict:
        kinds = params[1] if len(params) == 2 else None
        if mode == "numbers":
            changed = _items(list(value.values()), kinds, mode, labels=list(value))
            if changed is None:
                return None
            return dict(zip(value, changed[0], strict=True)), changed[1]
        if head == "Mapping":
            return types.MappingProxyType(dict(value)), "as a read-only mapping instead of a dict"
    return None


def _items(values, kinds, mode: str, kind=list, labels=None):
    """The items of ``values`` with each retyped by its declared type (``kinds``: one for
    every item, or one per position), as ``(kind of items, how)``; None if none changed.
    ``labels`` name the items where they are a mapping's values (by key)."""
    if kinds is None:
        return None
    new, hows = [], []
    for i, v in enumerate(values):
        found = _retype(v, kinds[i] if isinstance(kinds, list) else kinds, mode)
        new.append(v if found is None else found[0])
        if found is not None:
            item = f"item {i}" if labels is None else f"the value at {labels[i]!r}"
            how = found[1]
            hows.append(f"{item}'s {how[5:]}" if how.startswith("with ") else f"{item} {how}")
    if not hows:
        return None
    how = hows[0] if len(hows) == 1 else f"{hows[0]} (and {len(hows) - 1} more items likewise)"
    return kind(new), f"with {how}"


def _same_kind(value, items: list):
    if type(value) is torch.Size:
        return tuple(items)
    return type(value)(items)
