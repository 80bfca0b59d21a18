"""What the student's side gets of a test file: its probes and what they declare, nothing else.

The grader runs probes in the student's process, so that process needs the probe
functions and what they use. It must not get the tests themselves: their expected
values, labels, reference helpers and messages. So nothing is shipped because a name
analysis thinks it is needed; a test file says what its probes use in one module-level
string of names::

    PROBES_USE = "PROGRAMS small_program snapshot"

and the student's side of the file is exactly

- its imports of libraries (also inside a ``try`` that does nothing but import),
- the handles on the student's module (``sh = chapter_module("ch01", "shapes")``),
- its ``@probe`` functions and the definitions ``PROBES_USE`` names (a hidden file may
  name what it imports from its public twin; that twin then ships it too),
- module-level calls (setup both sides run, such as ch09a's
  ``skip_compile_bookkeeping()``),

with every other line blank, so line numbers stay those of the real file. Comments and
docstrings of what is kept are dropped too: beside a program handed to the student, a
comment may say what the program computes.

The declaration is checked, never completed: ``StripError`` when kept code uses a
module-level name of its file that is not kept (declare it, or keep it out of probes),
when a declared name is not defined, and for module-level code that fits none of the
kinds above (an ``if``, a ``for``, a ``with``, a ``try`` that does more than import).
"""

from __future__ import annotations

import ast
import hashlib
import io
import symtable
import threading
import tokenize
from pathlib import Path

TEST_MODULE_PREFIXES = ("exercises.", "grader.hidden.")
DECLARATION = "PROBES_USE"


class StripError(Exception):
    """A test file whose student side cannot be built from its declaration (a course bug)."""


def _is_probe(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if name == "probe":
            return True
    return False


def _is_import_block(stmt: ast.stmt) -> bool:
    """An import, or a ``try`` of imports whose handlers only pass or import."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return True
    if not isinstance(stmt, ast.Try) or stmt.orelse or stmt.finalbody:
        return False
    handled = [s for h in stmt.handlers for s in h.body]
    return all(isinstance(s, ast.Import | ast.ImportFrom) for s in stmt.body) and all(
        isinstance(s, ast.Import | ast.ImportFrom | ast.Pass) for s in handled
    )


def _is_handle(stmt: ast.stmt) -> bool:
    """``name = chapter_module(...)``: the student's module, as the probes reach it."""
    return (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "chapter_module"
    )


def _is_setup_call(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _bound(stmt: ast.stmt) -> set[str]:
    """Module-level names a statement binds (only its targets: never a name bound inside
    a comprehension, a lambda or a function of it)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
        targets = [stmt.target]
    elif isinstance(stmt, ast.Try | ast.If | ast.For | ast.While | ast.With):
        inner = list(getattr(stmt, "body", [])) + list(getattr(stmt, "orelse", []))
        inner += [s for h in getattr(stmt, "handlers", []) for s in h.body]
        inner += list(getattr(stmt, "finalbody", []))
        names = set().union(*(_bound(s) for s in inner)) if inner else set()
        if isinstance(stmt, ast.For):
            targets = [stmt.target]
        elif isinstance(stmt, ast.With):
            targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
        else:
            targets = []
        return names | {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    else:
        return set()
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _globals_used(source: str) -> set[str]:
    """Module-level names the code in ``source`` (one top-level statement) reads."""
    table = symtable.symtable(source, "<probe>", "exec")
    found = {
        s.get_name()
        for s in table.get_symbols()
        if s.is_referenced() and not s.is_assigned() and not s.is_imported()
    }
    todo = list(table.get_children())
    while todo:
        scope = todo.pop()
        found |= {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()}
        todo += scope.get_children()
    return found


class TestFile:
    """One parsed test file: its statements, what each binds, its probes and declaration."""

    def __init__(self, path: Path, rel: str) -> None:
        self.path, self.rel = path, rel
        self.source = path.read_text(encoding="utf-8")
        self.tree = ast.parse(self.source)
        self.lines = self.source.splitlines()
        self.module_name = rel.removesuffix(".py").replace("/", ".")
        self.defs: dict[str, list[ast.stmt]] = {}
        for stmt in self.tree.body:
            for name in _bound(stmt):
                self.defs.setdefault(name, []).append(stmt)
        self.probes = {s.name for s in self.tree.body if _is_probe(s)}
        self.declared = self._declaration()
        for name in self.declared:
            if name not in self.defs:
                raise StripError(f"{rel}: {DECLARATION} names {name!r}, which it does not define")

    def _declaration(self) -> set[str]:
        found = [
            s
            for s in self.tree.body
            if isinstance(s, ast.Assign | ast.AnnAssign) and DECLARATION in _bound(s)
        ]
        if not found:
            return set()
        if len(found) > 1:
            raise StripError(f"{self.rel}: {DECLARATION} is assigned more than once")
        value = found[0].value
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            raise StripError(
                f"{self.rel}:{found[0].lineno}: {DECLARATION} must be one string of names "
                'separated by spaces ("snapshot changes PROGRAMS")'
            )
        return set(value.value.split())

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

    def segment(self, stmt: ast.stmt) -> tuple[int, int]:
        """First and last line (1-based) of ``stmt``, decorators included."""
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        return start, stmt.end_lineno


def stripped_source(tf: TestFile, keep: set[str]) -> str:
    """``tf``'s source with everything but the student side (``keep``: the declared names
    and the probes) blanked out, and no comment or docstring in what is left."""
    out = [""] * len(tf.lines)
    kept_names: set[str] = set()
    kept: list[ast.stmt] = []

    def copy(stmt: ast.stmt) -> None:
        start, end = tf.segment(stmt)
        out[start - 1 : end] = tf.lines[start - 1 : end]
        kept.append(stmt)

    for stmt in tf.tree.body:
        if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith(
            TEST_MODULE_PREFIXES
        ):
            wanted = [a for a in stmt.names if (a.asname or a.name) in keep]
            if wanted:
                names = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in wanted)
                out[stmt.lineno - 1] = f"from {stmt.module} import {names}"
                kept_names |= {a.asname or a.name for a in wanted}
        elif _is_import_block(stmt) or _is_handle(stmt) or _is_setup_call(stmt):
            copy(stmt)
            kept_names |= _bound(stmt)
        elif _bound(stmt) & keep:
            copy(stmt)
            kept_names |= _bound(stmt)
        elif _is_docstring(stmt) or isinstance(
            stmt,
            ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign,
        ):
            continue  # trusted side only
        else:
            raise StripError(
                f"{tf.rel}:{stmt.lineno}: module-level {type(stmt).__name__.lower()} statement: "
                "the student's side runs only imports, chapter_module handles, probes, what "
                f"{DECLARATION} names and module-level calls; move it into a function"
            )
    for stmt in kept:
        start, end = tf.segment(stmt)
        used = _globals_used("\n".join(tf.lines[start - 1 : end]) + "\n")
        missing = sorted(n for n in used if n in tf.defs and n not in kept_names)
        if missing:
            what = getattr(stmt, "name", None) or f"line {start}"
            raise StripError(
                f"{tf.rel}: {what} (line {start}) uses {', '.join(missing)}, which the student's "
                f"side does not get: add it to {DECLARATION} if the probes need it (it must then "
                "hold inputs only, never an expected value), or keep it out of probes"
            )
    return _without_notes("\n".join(out) + "\n", tf.rel)


def _without_notes(text: str, rel: str) -> str:
    """``text`` with its docstrings replaced by ``...`` and its comments removed, every
    line where it was."""
    lines = text.split("\n")
    for node in ast.walk(ast.parse(text)):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if not _is_docstring(stmt):
                continue
            first, last = stmt.lineno - 1, stmt.end_lineno - 1
            head = lines[first].encode()[: stmt.col_offset].decode()
            tail = lines[last].encode()[stmt.end_col_offset :].decode()
            lines[first] = head + "..." + (tail if first == last else "")
            for i in range(first + 1, last + 1):
                lines[i] = ""
            if last > first:
                lines[last] = tail
    text = "\n".join(lines)
    lines = text.split("\n")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col].rstrip()
    text = "\n".join(lines)
    try:
        ast.parse(text)
    except SyntaxError as exc:  # pragma: no cover - a bug here, never a student's
        raise StripError(f"{rel}: the stripped copy does not parse ({exc})") from None
    return text


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
    (``hidden=False``) gets the public files only; the hidden phase gets the hidden
    files as well, and the public files with what the hidden ones import from them.
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
    files = {
        rel: TestFile(p, rel)
        for rel, p in paths.items()
        if hidden or not rel.startswith("grader/hidden/")
    }
    by_module = {f.module_name: f for f in files.values()}
    keep = {rel: tf.probes | tf.declared for rel, tf in files.items()}
    for rel, tf in files.items():
        for local, (module, name) in tf.imports_from_tests().items():
            if local in tf.declared:
                if module not in by_module:
                    raise StripError(f"{rel}: declares {local!r}, imported from {module}, not here")
                keep[by_module[module].rel].add(name)
    for rel, tf in files.items():  # what another file declared must exist in its own
        for name in keep[rel] - tf.probes - tf.declared:
            if name not in tf.defs:
                raise StripError(f"{rel}: {name!r} is imported by a declaration but not defined")
    return {rel: stripped_source(tf, keep[rel]) for rel, tf in files.items()}
