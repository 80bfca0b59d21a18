"""Results have the type the stub declares: every function's and method's return annotation,
and the fields of the named tuples and dataclasses the stubs define, as shipped.

``harness/declared.py`` holds them (``table()``), written from the stubs by
``python -m harness.returns --write`` and checked against them by ``tests/test_structure.py``,
so the declared types come from the course, never from the module being checked (and
travel with the harness into every sandbox).
``mismatch(value, annotation, namespace)`` says where a value is not of its declared type
(None when it is). Names the annotation uses are looked up in the student's module
(``namespace``), so its own ``TrainResult`` is the class its results must be.

Numbers follow the annotations' usual reading: an ``int`` is a ``float``, a numpy integer
is an ``int``, numpy's float64 (a ``float`` subclass) is a ``float`` but its float32 and
float16 are not, and ``bool`` is neither (nor is numpy's bool a ``bool``). A tensor is never a Python number, even with one
element: a loss kept as a tensor where a ``float`` is declared is the mistake this catches.
"""

from __future__ import annotations

import ast
import numbers
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import torch

from harness.index import REPO, chapters

TABLE = Path(__file__).with_name("declared.py")
MAX_ITEMS = 10_000  # items of a list or dict checked (the first ones)
_ANY = object()  # what an annotation the checker does not read accepts


# ---- the table ------------------------------------------------------------------------------


def _declared(stub: str) -> tuple[dict, dict, dict, dict]:
    """``({function or Class.method: return annotation}, {Class: {field: annotation}},
    {function or Class.method: parameters}, {function or Class.method: {parameter:
    annotation}})`` of a stub's public definitions (fields: named tuples and dataclasses;
    parameters: ``harness.signatures``' form; annotations: ``harness.retyped``'s)."""
    returns, fields, parameters, annotations = {}, {}, {}, {}
    for node in ast.parse(stub).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            parameters[node.name] = _parameters(node.args)
            annotations[node.name] = _annotations(node.args)
            if node.returns:
                returns[node.name] = ast.unparse(node.returns)
        if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
            continue
        for item in node.body:
            public = isinstance(item, ast.FunctionDef) and not item.name.startswith("_")
            if public or getattr(item, "name", "") == "forward":
                parameters[f"{node.name}.{item.name}"] = _parameters(item.args)
                annotations[f"{node.name}.{item.name}"] = _annotations(item.args)
                if item.returns:
                    returns[f"{node.name}.{item.name}"] = ast.unparse(item.returns)
        record = {
            item.target.id: ast.unparse(item.annotation)
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        }
        if record and _is_record(node):
            fields[node.name] = record
    return returns, fields, parameters, {k: v for k, v in annotations.items() if v}


def _parameters(args: ast.arguments) -> list[list]:
    """``[[name, kind, default source or None], ...]``; kind "positional", "keyword", "*"
    or "**"."""
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found = [
        [a.arg, "positional", None if d is None else ast.unparse(d)]
        for a, d in zip(positional, defaults, strict=True)
    ]
    if args.vararg:
        found.append([args.vararg.arg, "*", None])
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        found.append([a.arg, "keyword", None if d is None else ast.unparse(d)])
    if args.kwarg:
        found.append([args.kwarg.arg, "**", None])
    return found


def _annotations(args: ast.arguments) -> dict[str, str]:
    """``{parameter: annotation}`` of the parameters that have one."""
    every = args.posonlyargs + args.args + args.kwonlyargs
    return {a.arg: ast.unparse(a.annotation) for a in every if a.annotation is not None}


def _is_record(node: ast.ClassDef) -> bool:
    bases = {ast.unparse(b) for b in node.bases}
    decorators = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
    return bool(bases & {"NamedTuple", "typing.NamedTuple"}) or bool(
        decorators & {"dataclass", "dataclasses.dataclass"}
    )


def table_from_stubs() -> dict:
    """What ``harness/declared.py`` must say for the stubs as they are now."""
    found: dict = {"returns": {}, "fields": {}, "parameters": {}, "annotations": {}}
    for chapter in chapters().values():
        stub = (REPO / "exercises" / chapter.id / f"{chapter.module}.py").read_text(
            encoding="utf-8"
        )
        returns, fields, parameters, annotations = _declared(stub)
        found["returns"][chapter.id] = returns
        found["fields"][chapter.id] = fields
        found["parameters"][chapter.id] = parameters
        found["annotations"][chapter.id] = annotations
    return found


def table() -> dict:
    """``{"returns": {chapter: {name: annotation}}, "fields": {chapter: {Class: {field:
    annotation}}}, "parameters": {chapter: {name: parameters}}, "annotations": {chapter:
    {name: {parameter: annotation}}}}``, as
    ``harness/declared.py`` holds it."""
    from harness import declared

    return {
        "returns": declared.RETURNS,
        "fields": declared.FIELDS,
        "parameters": declared.PARAMETERS,
        "annotations": declared.ANNOTATIONS,
    }


def result_mismatch(key: str, value, namespace: dict) -> tuple[str, str] | None:
    """``(declared annotation, where it differs)`` for the result of the call ``key``
    (``chNN.name`` or ``chNN.Class.method``), or None."""
    from harness import declared

    chapter, _, name = key.partition(".")
    annotation = declared.RETURNS.get(chapter, {}).get(name)
    if annotation is None or annotation == "None":  # what a procedure returns is not used
        return None
    found = mismatch(value, annotation, namespace, declared.FIELDS.get(chapter, {}))
    return None if found is None else (annotation, found)


def _to_python(found: dict) -> str:
    return (
        '"""What the stubs declare, which the harness checks on every call: result types\n'
        "(harness/returns.py), parameters (harness/signatures.py) and parameters' types\n"
        "(harness/retyped.py).\n\n"
        "Written by `python -m harness.returns --write`; tests/test_structure.py keeps it equal\n"
        'to the stubs."""\n\n'
        f"RETURNS = {found['returns']!r}\n\nFIELDS = {found['fields']!r}\n\n"
        f"PARAMETERS = {found['parameters']!r}\n\n"
        f"ANNOTATIONS = {found['annotations']!r}\n"
    )


# ---- checking a value -----------------------------------------------------------------------


def _kind(value) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _resolve(node: ast.expr, namespace: dict):
    """The object a dotted name in an annotation means in ``namespace`` (``_ANY`` when it
    cannot be found: such a part is not checked)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return _ANY
    parts.append(node.id)
    head, *rest = reversed(parts)
    obj = namespace.get(head, _ANY)
    if obj is _ANY:
        obj = {"torch": torch, "Path": Path, "Tensor": torch.Tensor}.get(head, _ANY)
    for attr in rest:
        obj = getattr(obj, attr, _ANY) if obj is not _ANY else _ANY
    return obj


def _number(value, kind: str) -> bool:
    if isinstance(value, np.bool_):  # no bool: ``is True`` fails and json refuses it
        return False
    if isinstance(value, bool):
        return kind == "bool"
    if kind == "float":  # a numpy float32 rounds what it holds and is no Python float
        narrow = isinstance(value, np.floating) and not isinstance(value, float)
        return isinstance(value, numbers.Real) and not narrow
    if kind == "int":
        return isinstance(value, numbers.Integral)
    return False


def mismatch(value, annotation: str, namespace: dict, fields: dict | None = None) -> str | None:
    """Where ``value`` is not of type ``annotation`` (``"result[1] is a list, not a
    tuple[int, int]"``), or None. ``fields``: ``{Class: {field: annotation}}`` of the
    records whose fields are checked too."""
    tree = _parsed(annotation)
    return None if tree is None else _check(value, tree, namespace, fields or {}, "the result", 0)


@cache
def _parsed(annotation: str) -> ast.expr | None:
    try:
        return ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return None


def _check(value, node, namespace, fields, where, depth) -> str | None:  # noqa: C901, PLR0911, PLR0912
    if depth > 8:
        return None
    wanted = ast.unparse(node)
    wrong = f"{where} is a {_kind(value)}, not a {wanted}"
    if isinstance(node, ast.Constant) and node.value is None:
        return None if value is None else wrong
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _check(value, node.left, namespace, fields, where, depth + 1)
        right = _check(value, node.right, namespace, fields, where, depth + 1)
        return None if left is None or right is None else wrong
    if isinstance(node, ast.Subscript):
        origin = ast.unparse(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if origin == "tuple":
            if not isinstance(value, tuple):
                return wrong
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is ...:
                args = [args[0]] * len(value)
            if len(args) != len(value):
                return f"{where} has {len(value)} items, not the {len(args)} of a {wanted}"
            for i, (item, arg) in enumerate(zip(value, args, strict=True)):
                found = _check(item, arg, namespace, fields, f"{where}[{i}]", depth + 1)
                if found:
                    return found
            return None
        if origin == "list":
            if not isinstance(value, list):
                return wrong
            for i, item in enumerate(value[:MAX_ITEMS]):
                found = _check(item, args[0], namespace, fields, f"{where}[{i}]", depth + 1)
                if found:
                    return found
            return None
        if origin == "dict":
            if not isinstance(value, dict):
                return wrong
            for key, item in list(value.items())[:MAX_ITEMS]:
                found = _check(key, args[0], namespace, fields, f"a key of {where}", depth + 1)
                found = found or _check(
                    item, args[1], namespace, fields, f"{where}[{key!r}]", depth + 1
                )
                if found:
                    return found
            return None
        return None  # another generic: not read
    if not isinstance(node, ast.Name | ast.Attribute):
        return None
    name = ast.unparse(node)
    if name in ("float", "int", "bool"):
        return None if _number(value, name) else wrong
    if name == "str":
        return None if isinstance(value, str) else wrong
    if name in ("Any", "typing.Any", "object"):
        return None
    declared = _resolve(node, namespace)
    if isinstance(declared, type):
        if not isinstance(value, declared):
            return wrong
        record = fields.get(name)
        for field, annotation in (record or {}).items():
            inner = _parsed(annotation)
            found = inner is not None and _check(
                getattr(value, field, None), inner, namespace, fields, f"{where}.{field}", depth + 1
            )
            if found:
                return found
        return None
    alias = getattr(declared, "__value__", None) or declared  # a type alias: what it names
    if alias is not _ANY and hasattr(alias, "__origin__"):
        inner = _parsed(repr(alias).replace("typing.", ""))  # Params: "dict[str, torch.Tensor]"
        return None if inner is None else _check(value, inner, namespace, fields, where, depth + 1)
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = _to_python(table_from_stubs())
    if argv == ["--write"]:
        TABLE.write_text(text, encoding="utf-8")
        subprocess.run([sys.executable, "-m", "ruff", "format", str(TABLE)], check=False)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
