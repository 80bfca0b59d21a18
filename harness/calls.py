"""Which of the student's functions a call may reach, and which one was running.

Two answers, both for the grader's trusted side (``grader.verdict``):

- ``probe_reach(fn, args, kwargs)``: the names a call of a ``@probe`` may use on a
  ``chapter_module(...)`` handle, read from the test file's own source (the probe, and
  the functions, classes and names of its file — or of the public twin it imports them
  from — that it uses; ``getattr(tl, name)`` of one of its own parameters counts the
  argument). An over-approximation: a name used in a branch that never runs still
  counts. ``None`` when the handle itself is handed on (passing ``sh``, ``getattr(sh,
  x)`` of anything else): then its reach is unknown.
- ``entry_in_dump(dump, source, chapter, module)``: the top-level definition of the
  student's module that a stack dump (``faulthandler``'s, written by the student's
  process) shows the tests' request running in, outermost first, and the innermost line
  of the module it was at. The dump comes from the student's process and may lie: use it
  only to cost that student's own tests, never to pass one.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from harness.target import REPO

# ---- a probe's reach -------------------------------------------------------------------


def _handle(value: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "chapter_module"
    )


class _File:
    """One test file's module-level names: handles, definitions, imports from twins."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(), str(path))
        self.handles: set[str] = set()
        self.defs: dict[str, list[ast.AST]] = {}
        self.imported: dict[str, tuple[Path, str]] = {}
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defs.setdefault(stmt.name, []).append(stmt)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for node in ast.walk(target):
                        if isinstance(node, ast.Name):
                            if _handle(stmt.value):
                                self.handles.add(node.id)
                            else:
                                self.defs.setdefault(node.id, []).append(stmt.value)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
                if stmt.module.startswith(("exercises.", "grader.hidden.")):
                    twin = REPO.joinpath(*stmt.module.split(".")).with_suffix(".py")
                    for alias in stmt.names:
                        self.imported[alias.asname or alias.name] = (twin, alias.name)


@functools.lru_cache(maxsize=64)
def _file(path: Path, mtime: float) -> _File:
    return _File(path)


@functools.lru_cache(maxsize=512)
def _static_reach(path: Path, name: str) -> tuple[frozenset[str], tuple[str, ...]] | None:
    """(names, parameters): the handle attributes a probe uses by name, and those of its
    own parameters it looks up on a handle (``getattr(tl, name)``); None when unknown."""
    found: set[str] = set()
    by_parameter: set[str] = set()
    todo, seen = [(Path(path), name)], set()
    while todo:
        where, what = todo.pop()
        if (where, what) in seen or not where.is_file():
            continue
        seen.add((where, what))
        file = _file(where, where.stat().st_mtime)
        if what in file.imported:
            todo.append(file.imported[what])
            continue
        for node in file.defs.get(what, []):
            params = _parameters(node) if (where, what) == (Path(path), name) else set()
            owners = set()
            for sub in ast.walk(node):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name):
                    if sub.value.id in file.handles:
                        found.add(sub.attr)
                        owners.add(id(sub.value))
                looked_up = _getattr_of_handle(sub, file.handles)
                if looked_up is not None:
                    owners.add(id(sub.args[0]))
                    key = sub.args[1]
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        found.add(key.value)
                    elif isinstance(key, ast.Name) and key.id in params:
                        by_parameter.add(key.id)
                    else:
                        return None
            for sub in ast.walk(node):
                if not isinstance(sub, ast.Name) or id(sub) in owners:
                    continue
                if sub.id in file.handles:
                    return None  # the handle itself escapes: any name may be reached
                if sub.id in file.defs or sub.id in file.imported:
                    todo.append((where, sub.id))
    return frozenset(found), tuple(sorted(by_parameter))


def _parameters(node: ast.AST) -> set[str]:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return set()
    a = node.args
    return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}


def _getattr_of_handle(node: ast.AST, handles: set[str]) -> ast.Call | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in handles
    ):
        return node
    return None


def probe_reach(fn, args: tuple = (), kwargs: dict | None = None) -> frozenset[str] | None:
    """The attributes of a ``chapter_module(...)`` handle that a call of the probe
    function ``fn`` with these arguments may use, through the definitions of its file (or
    its public twin's) it reaches; None when unknown."""
    import inspect

    try:
        path = Path(inspect.getsourcefile(fn)).resolve()
        static = _static_reach(path, fn.__qualname__)
    except (OSError, TypeError, SyntaxError):
        return None
    if static is None:
        return None
    names, by_parameter = static
    if not by_parameter:
        return names
    try:
        bound = inspect.signature(fn).bind(*args, **(kwargs or {}))
    except TypeError:
        return None
    named = [bound.arguments.get(p) for p in by_parameter]
    if not all(isinstance(v, str) for v in named):
        return None
    return names | frozenset(named)


# ---- where a stack dump says the request was ----------------------------------------------

_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<name>\S+)')
_THREAD = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+")


def def_spans(source: str, top_only: bool = True) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of each top-level def and class of a module (or of
    every one, nested ones after those around them)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    spans = []
    for stmt in tree.body if top_only else ast.walk(tree):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
            spans.append((first, stmt.end_lineno or stmt.lineno, stmt.name))
    return spans


def _innermost(spans: list[tuple[int, int, str]], line: int) -> str | None:
    around = [(b - a, n) for a, b, n in spans if a <= line <= b]
    return min(around)[1] if around else None


def _threads(dump: str) -> list[list[tuple[str, int, str]]]:
    """The frames of each thread of the last dump in ``dump``, most recent call first."""
    threads: list[list[tuple[str, int, str]]] = []
    for line in dump.splitlines():
        if _THREAD.match(line):
            if line.startswith("Current thread") or line.startswith("Thread"):
                if threads and not threads[-1]:
                    threads.pop()
                threads.append([])
            continue
        match = _FRAME.match(line)
        if match and threads:
            threads[-1].append((match["file"], int(match["line"]), match["name"]))
    return [t for t in threads if t]


def last_dump(text: str) -> str:
    """The last stack dump in ``text`` (a log): from the first thread header of the last
    group of consecutive thread sections."""
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if _THREAD.match(line)]
    if not starts:
        return ""
    begin = starts[-1]
    for k in reversed(starts[:-1]):
        between = lines[k + 1 : begin]
        if all(_FRAME.match(x) or not x.strip() for x in between):
            begin = k
        else:
            break
    return "\n".join(lines[begin:])


def entry_in_dump(dump: str, source: str, chapter: str, module: str) -> tuple[str, str] | None:
    """(the top-level definition the request entered, "name, line N": the innermost
    frame of the student's module) from a stack dump, or None when the dump shows no
    frame of the module. The thread serving the tests' requests is the one whose stack
    holds ``beside.py``; without one, every thread is read."""
    suffix = f"impl/{chapter}/{module}.py"
    threads = _threads(dump)
    serving = [t for t in threads if any(f.endswith("harness/beside.py") for f, _, _ in t)]
    top, every = def_spans(source), def_spans(source, top_only=False)
    for frames in serving or threads:
        own = [line for file, line, _ in frames if file.endswith(suffix)]
        entry = _innermost(top, own[-1]) if own else None
        if entry is None:
            continue  # no frame of the module, or only its module-level code
        # names from the grader's copy of the source, never the dump's own words
        return entry, f"{_innermost(every, own[0]) or entry}, line {own[0]}"
    return None


# ---- what hung, in this run ---------------------------------------------------------------


class Hangs:
    """The functions (and probes) of each chapter that hung in this run: a later call
    that may reach one fails at once instead of hanging again."""

    def __init__(self) -> None:
        self.functions: dict[
            str, dict[str, tuple[str, str]]
        ] = {}  # chapter -> name -> (test, where)
        self.probes: dict[str, dict[str, str]] = {}  # chapter -> probe -> test

    def note(self, chapter: str, test: str, function: str | None, probe: str, where: str) -> None:
        if function:
            self.functions.setdefault(chapter, {}).setdefault(function, (test, where))
        if probe:
            self.probes.setdefault(chapter, {}).setdefault(probe, test)

    def refusal(
        self, chapter: str, reach: frozenset[str] | None, probe: str, hidden_now: bool = False
    ) -> str:
        """Why a call must not run (a function it may reach hung earlier), or ""."""
        hung = self.functions.get(chapter, {})
        for name in sorted(hung.keys() & (reach or frozenset())):
            return (
                f"{name} hung earlier in this run ({_in(hung[name][0], hidden_now)}): not run again"
            )
        if probe and probe in self.probes.get(chapter, {}):
            test = self.probes[chapter][probe]
            return (
                f"probe {probe.rsplit('::', 1)[-1]} hung earlier in this run "
                f"({_in(test, hidden_now)}): not run again"
            )
        return ""


def _in(test: str, hidden_now: bool) -> str:
    """Where it hung, as a student may read it: a hidden test is not named in a public one."""
    if test.startswith("grader/hidden/") and not hidden_now:
        return "in a hidden test"
    return f"in {test.split('::')[-1]}"
