"""What the student's side gets of a test file: its probes and what they use, nothing else.

The grader runs probes in the student's process, so that process needs the probe
functions and the helpers, classes, constants and imports they reach. It must not get
the tests themselves: their expected values, reference helpers and messages. ``strip``
keeps the definitions reachable from the chosen probes (following names, also into
the public twin a hidden file imports from) and blanks every other line, so line
numbers stay those of the real file (tests may check that a location points at one).
"""

from __future__ import annotations

import ast
import hashlib
import threading
from pathlib import Path

TEST_MODULE_PREFIXES = ("exercises.", "grader.hidden.")


def _is_probe(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name == "probe":
            return True
    return False


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.value.id
        for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
    }


def _defined(stmt: ast.stmt) -> set[str]:
    """Module-level names a statement binds."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _is_setup(stmt: ast.stmt) -> bool:
    """Module-level code that is neither a definition nor an import (the docstring, an `if`,
    a `try`, a call): it may set up what probes use, so the student's side runs it too."""
    return not isinstance(
        stmt,
        ast.Import
        | ast.ImportFrom
        | ast.FunctionDef
        | ast.AsyncFunctionDef
        | ast.ClassDef
        | ast.Assign
        | ast.AnnAssign,
    )


class TestFile:
    """One parsed test file: which statement defines which name, and its probes."""

    def __init__(self, path: Path, rel: str) -> None:
        self.path, self.rel = path, rel
        self.source = path.read_text(encoding="utf-8")
        self.tree = ast.parse(self.source)
        self.module_name = rel.removesuffix(".py").replace("/", ".")
        self.defs: dict[str, list[ast.stmt]] = {}
        for stmt in self.tree.body:
            for name in _defined(stmt):
                self.defs.setdefault(name, []).append(stmt)
        self.probes = {s.name for s in self.tree.body if _is_probe(s)}
        # what the setup code calls must come along with it
        self.setup_uses = {n for s in self.tree.body if _is_setup(s) for n in _names_used(s)}

    def imports_from_tests(self) -> dict[str, tuple[str, str]]:
        """local name -> (module, name) for ``from exercises... import name``."""
        found = {}
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(
                TEST_MODULE_PREFIXES
            ):
                for a in stmt.names:
                    found[a.asname or a.name] = (stmt.module, a.name)
        return found


def closure(files: dict[str, TestFile], roots: dict[str, set[str]]) -> dict[str, set[str]]:
    """For each file, the module-level names reachable from ``roots`` (file -> names)."""
    by_module = {f.module_name: f for f in files.values()}
    keep: dict[str, set[str]] = {rel: set() for rel in files}
    todo = [(rel, name) for rel, names in roots.items() for name in names]
    while todo:
        rel, name = todo.pop()
        if name in keep[rel]:
            continue
        tf = files[rel]
        imported = tf.imports_from_tests().get(name)
        if imported and imported[0] in by_module:
            keep[rel].add(name)
            todo.append((by_module[imported[0]].rel, imported[1]))
            continue
        if name not in tf.defs:
            continue  # a builtin, or a name from a library import (always kept)
        keep[rel].add(name)
        for stmt in tf.defs[name]:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                continue
            todo += [(rel, used) for used in _names_used(stmt)]
    return keep


def stripped_source(tf: TestFile, keep: set[str]) -> str:
    """``tf``'s source with every statement not needed by ``keep`` blanked out."""
    lines = tf.source.splitlines()
    out = [""] * len(lines)

    def copy(stmt: ast.stmt) -> None:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        for i in range(start - 1, stmt.end_lineno):
            out[i] = lines[i]

    for stmt in tf.tree.body:
        if isinstance(stmt, ast.Import):
            copy(stmt)
        elif isinstance(stmt, ast.ImportFrom):
            if not (stmt.module or "").startswith(TEST_MODULE_PREFIXES):
                copy(stmt)
                continue
            wanted = [a for a in stmt.names if (a.asname or a.name) in keep]
            if wanted:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in wanted)
                out[stmt.lineno - 1] = f"from {stmt.module} import {names}"
        elif _defined(stmt) & keep or _is_setup(stmt):
            copy(stmt)
    return "\n".join(out) + "\n"


# The grader builds sandboxes from several threads, and CPython 3.11's AST conversion is
# not thread-safe (concurrent ast.parse can fail with "SystemError: AST constructor
# recursion depth mismatch"): one thread strips at a time, and each result is kept, as
# every submission gets the same stripped files.
_LOCK = threading.Lock()
_DONE: dict[tuple, dict[str, str]] = {}


def student_side(paths: dict[str, Path], hidden: bool) -> dict[str, str]:
    """rel path -> stripped source for one student process.

    ``paths`` maps rel paths (``exercises/ch02/test_autograd.py``,
    ``grader/hidden/ch02/test_autograd_hidden.py``) to files. The public phase
    (``hidden=False``) gets the public files' probes only; the hidden phase gets the
    hidden files' probes and the public probes they may call.
    """
    key = (
        hidden,
        tuple(
            sorted((rel, hashlib.sha256(p.read_bytes()).hexdigest()) for rel, p in paths.items())
        ),
    )
    with _LOCK:
        if key not in _DONE:
            _DONE[key] = _student_side(paths, hidden)
        return dict(_DONE[key])


def _student_side(paths: dict[str, Path], hidden: bool) -> dict[str, str]:
    files = {rel: TestFile(p, rel) for rel, p in paths.items()}
    chosen = {
        rel: tf.probes | tf.setup_uses
        for rel, tf in files.items()
        if hidden or not rel.startswith("grader/hidden/")
    }
    keep = closure(files, chosen)
    return {
        rel: stripped_source(tf, keep[rel])
        for rel, tf in files.items()
        if hidden or not rel.startswith("grader/hidden/")
    }
