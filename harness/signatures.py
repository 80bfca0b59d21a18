"""A student's function takes the parameters its stub declares: the same names in the same
order, optional where the stub's are, with the stub's plain defaults.

Callers, the tests among them, pass arguments by name (``attention(q, k, v, mask=m)``), so
a renamed parameter breaks every such caller even where a positional call still works.
``harness/declared.py`` holds the stubs' parameters (written from the stubs by
``python -m harness.returns --write``); ``mismatch(key, fn)`` says how ``fn``'s signature
differs from the one declared for ``key`` (``chNN.name`` or ``chNN.Class.method``). A
submission may add parameters of its own, as long as they are optional.
"""

from __future__ import annotations

import ast
import inspect
import weakref

_KINDS = {
    "positional": (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD),
    "keyword": (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD),
    "*": (inspect.Parameter.VAR_POSITIONAL,),
    "**": (inspect.Parameter.VAR_KEYWORD,),
}
_seen: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _declared(key: str) -> list | None:
    from harness import declared

    chapter, _, name = key.partition(".")
    return declared.PARAMETERS.get(chapter, {}).get(name)


def declared_text(key: str) -> str:
    """The parameters declared for ``key`` as a signature reads: ``(q, k, v, mask=None)``."""
    parts, starred = [], False
    for name, kind, default in _declared(key) or []:
        if kind == "keyword" and not starred:
            parts.append("*")
            starred = True
        starred |= kind == "*"
        prefix = {"*": "*", "**": "**"}.get(kind, "")
        parts.append(f"{prefix}{name}" + ("" if default is None else f"={default}"))
    return f"({', '.join(parts)})"


def mismatch(key: str, fn) -> str | None:
    """How ``fn``'s parameters differ from those declared for ``key`` (None if they do not,
    or if nothing is declared or ``fn`` has no signature to read)."""
    try:
        return _seen[fn]
    except (KeyError, TypeError):
        pass
    found = _mismatch(key, fn)
    try:
        _seen[fn] = found
    except TypeError:
        pass
    return found


def _mismatch(key: str, fn) -> str | None:
    params = _declared(key)
    if params is None:
        return None
    try:
        own = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    order = [p.name for p in own.values() if p.kind in _KINDS["positional"]]
    for i, (pname, kind, default) in enumerate(params):
        if kind in ("*", "**"):
            if not any(p.kind in _KINDS[kind] for p in own.values()):
                return f"it takes no {kind}{pname}"
            continue
        p = own.get(pname)
        if p is None:
            return f"it has no parameter `{pname}`"
        if p.kind not in _KINDS[kind]:
            return f"`{pname}` is {p.kind.description}, not {kind}"
        if kind == "positional" and order.index(pname) != i:
            return f"`{pname}` comes at place {order.index(pname) + 1}, not {i + 1}"
        if default is not None:
            if p.default is inspect.Parameter.empty:
                return f"`{pname}` has no default (the exercise's is {default})"
            differs = _default_differs(default, p.default)
            if differs:
                return f"`{pname}` defaults to {p.default!r}, not {default}"
    declared_names = {pname for pname, _, _ in params}
    for p in own.values():
        required = p.default is inspect.Parameter.empty and p.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        )
        if p.name not in declared_names and required:
            return f"it requires a parameter `{p.name}` the exercise does not have"
    return None


def _default_differs(declared: str, own) -> bool:
    """Whether a plain default (a number, a string, None, a tuple of them) differs; a
    default the stub computes (``torch.float32``) is not compared."""
    try:
        value = ast.literal_eval(declared)
    except (ValueError, SyntaxError):
        return False
    try:
        return bool(value != own)
    except Exception:  # noqa: BLE001 - a default that cannot be compared is not judged
        return False
