"""The student's side of every test file holds inputs and probes, never an answer.

For each chapter and phase this builds what the grader puts in the student's sandbox
(``harness.strip.student_side``) and looks there for what the tests judge with, read
from the real file's syntax tree:

- the constants of every ``assert`` (expected values and messages), of
  ``pytest.approx``, ``because``, ``pytest.fail`` and ``pytest.raises(match=...)``;
- every constant of a module-level table no probe reaches (expected labels and their
  explanations), and every string of a module-level helper no probe reaches (messages
  built by judging helpers).

None of them may appear as a constant of the student's copy, except where it is an input
(an argument a test body passes to the student's code or a probe, a case id keying a
table of inputs), a key of what a probe returns, words a probe itself says, or part of
the ``chapter_module`` line; small
integers and strings under three characters are too common to mean anything. Long
explanations may not appear anywhere in the copy's text, and the copy holds no comment,
no docstring and no test.
"""

from __future__ import annotations

import ast
import io
import symtable
import tokenize
from pathlib import Path

import pytest

from harness import index, strip
from harness.target import REPO

CHAPTERS = list(index.chapters())
LONG = 4  # words: an explanation this long appears nowhere in the student's copy
# Declared inputs an assertion also compares with, each reviewed: file -> {table: why}.
COMPARED_INPUTS = {
    "grader/hidden/ch02/test_autograd_hidden.py": {
        "USER_FILES": "the file names the probe compiles the user's code under; a cut's "
        "location must name that file, which the student's code sees anyway",
    },
}
JUDGING = ("approx", "because", "fail", "raises", "isclose", "allclose", "assert_close")


def chapter_test_files(chapter: str) -> dict[str, Path]:
    chap = index.chapter(chapter)
    return {
        p.relative_to(REPO).as_posix(): p
        for p in (chap.public_tests, chap.hidden_tests)
        if p.exists()
    }


def _constants(node: ast.AST):
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and type(n.value) in (str, int, float, complex, bytes):
            yield n.value


def _meaningless(value) -> bool:
    if isinstance(value, str | bytes):
        return len(value.strip()) < 3
    if isinstance(value, complex):
        return False
    return value == value and abs(value) <= 16 and value == int(value)


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _globals_of(source: str) -> set[str]:
    table = symtable.symtable(source, "<test>", "exec")
    found, todo = set(), [table]
    while todo:
        scope = todo.pop()
        found |= {s.get_name() for s in scope.get_symbols() if s.is_referenced()}
        todo += scope.get_children()
    return found


class Judged:
    """What one real test file judges with, and what it may legitimately ship."""

    def __init__(self, path: Path, rel: str, reached_from_outside: set[str] = frozenset()) -> None:
        self.rel = rel
        self.source = path.read_text(encoding="utf-8")
        self.tree = ast.parse(self.source)
        lines = self.source.splitlines()
        defs: dict[str, ast.stmt] = {}
        for stmt in self.tree.body:
            for name in strip._bound(stmt):
                defs[name] = stmt

        def text(stmt):
            start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            return "\n".join(lines[start - 1 : stmt.end_lineno]) + "\n"

        # what probes reach, followed with real scoping (not by the strip's declaration)
        reached = {s.name for s in self.tree.body if strip._is_probe(s)} | set(reached_from_outside)
        for stmt in self.tree.body:  # module-level calls run on both sides
            if strip._is_setup_call(stmt):
                reached |= _globals_of(text(stmt)) & set(defs)
        todo = list(reached)
        while todo:
            stmt = defs.get(todo.pop())
            if stmt is None or isinstance(stmt, ast.Import | ast.ImportFrom):
                continue
            for name in _globals_of(text(stmt)) - reached:
                if name in defs:
                    reached.add(name)
                    todo.append(name)
        self.reached = reached

        self.answers: set = set()
        self.explanations: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assert):
                self.answers |= set(_constants(node.test))
                if node.msg is not None:
                    self.explanations |= {c for c in _constants(node.msg) if isinstance(c, str)}
            elif isinstance(node, ast.Call) and _called(node) in ("approx", "because", "fail"):
                self.answers |= set(_constants(node))
            elif isinstance(node, ast.Call) and _called(node) == "raises":
                self.answers |= {
                    c for k in node.keywords if k.arg == "match" for c in _constants(k)
                }
        tables = self._answer_tables(defs)
        for stmt in self.tree.body:
            if strip._bound(stmt) & tables:
                self.answers |= set(_constants(stmt))
            if strip._bound(stmt) & reached or strip._is_handle(stmt):
                continue
            if isinstance(
                stmt, ast.Assign | ast.AnnAssign
            ) and strip.DECLARATION not in strip._bound(stmt):
                self.answers |= set(_constants(stmt))
            elif isinstance(stmt, ast.FunctionDef) and not stmt.name.startswith("test_"):
                self.answers |= {c for c in _constants(stmt) if isinstance(c, str)}
        self.explanations |= {c for c in self.answers if isinstance(c, str)}

        # what may be in the student's copy all the same
        self.allowed: set = set()
        for stmt in self.tree.body:
            code = isinstance(stmt, ast.FunctionDef | ast.ClassDef) and stmt.name in reached
            if strip._is_handle(stmt) or code:
                self.allowed |= set(_constants(stmt))  # module ids, words probes say
            if strip._bound(stmt) & reached and isinstance(stmt, ast.Assign):
                for node in ast.walk(stmt.value):  # case ids: keys of an input table
                    if isinstance(node, ast.Dict):
                        self.allowed |= {
                            c for k in node.keys if k is not None for c in _constants(k)
                        }
            if isinstance(stmt, ast.FunctionDef) and stmt.name.startswith("test_"):
                for node in ast.walk(stmt):  # inputs: what a test body passes to a call
                    if isinstance(node, ast.Call) and _called(node) not in JUDGING:
                        for arg in [*node.args, *(k.value for k in node.keywords)]:
                            self.allowed |= set(_constants(arg))
        for node in ast.walk(self.tree):  # keys of what probes return: seen["png"]
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                self.allowed.add(node.slice.value)
            if isinstance(node, ast.Call) and _called(node) == "get" and node.args:
                self.allowed |= set(_constants(node.args[0]))

    def _answer_tables(self, defs: dict[str, ast.stmt]) -> set[str]:
        """Module-level tables an assertion's test reads, directly or through a local of
        its test bound from the table (``losses, expected, why = CURVES[case]``)."""
        tables = set()
        data = {n for n, s in defs.items() if isinstance(s, ast.Assign | ast.AnnAssign)}
        for fn in self.tree.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_")):
                continue
            source: dict[str, set[str]] = {}
            for node in ast.walk(fn):
                targets, value = [], None
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.For):
                    targets, value = [node.target], node.iter
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            source.setdefault(n.id, set()).update(
                                m.id for m in ast.walk(value) if isinstance(m, ast.Name)
                            )
            for node in ast.walk(fn):
                if isinstance(node, ast.Assert):
                    for n in ast.walk(node.test):
                        if isinstance(n, ast.Name):
                            direct = {n.id} - self.reached  # read whole: unless it is an input
                            tables |= (direct | source.get(n.id, set())) & data
        return tables - set(COMPARED_INPUTS.get(self.rel, {}))


def leaks(judged: Judged, copy: str) -> list[str]:
    """What of ``judged``'s answers the student's ``copy`` holds, one line each."""
    found = []
    tree = ast.parse(copy)
    shipped = {c for c in _constants(tree)}
    for value in sorted(
        (judged.answers & shipped) - judged.allowed, key=lambda v: (type(v).__name__, repr(v))
    ):
        if not _meaningless(value):
            found.append(f"an expected value or label: {value!r}")
    for text in sorted(judged.explanations - judged.allowed):
        if len(text.split()) >= LONG and text in copy:
            found.append(f"an explanation: {text[:60]!r}...")
    for tok in tokenize.generate_tokens(io.StringIO(copy).readline):
        if tok.type == tokenize.COMMENT:
            found.append(f"a comment at line {tok.start[0]}: {tok.string[:60]!r}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            found.append(f"the test {node.name} (line {node.lineno})")
        body = getattr(node, "body", None)
        if isinstance(body, list) and any(strip._is_docstring(s) for s in body):
            found.append(f"a docstring in {getattr(node, 'name', 'the module')}")
    return found


def student_copies(chapter: str, make=strip.student_side) -> dict[tuple[str, str], str]:
    files = chapter_test_files(chapter)
    return {
        (phase, rel): text
        for phase in ("public", "hidden")
        for rel, text in make(files, hidden=phase == "hidden").items()
    }


def judged_files(chapter: str) -> dict[str, Judged]:
    """Each test file of ``chapter``, a public file also with what its hidden twin's probes
    reach of it."""
    files = chapter_test_files(chapter)
    out = {rel: Judged(p, rel) for rel, p in files.items() if rel.startswith("grader/")}
    for rel, p in files.items():
        if rel.startswith("grader/"):
            continue
        module = rel.removesuffix(".py").replace("/", ".")
        outside = set()
        for hidden in out.values():
            for stmt in hidden.tree.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module == module:
                    outside |= {
                        a.name for a in stmt.names if (a.asname or a.name) in hidden.reached
                    }
        out[rel] = Judged(p, rel, outside)
    return out


def chapter_leaks(chapter: str, make=strip.student_side) -> list[str]:
    judged = judged_files(chapter)
    return [
        f"{phase} phase, {rel}: {leak}"
        for (phase, rel), copy in student_copies(chapter, make).items()
        for leak in leaks(judged[rel], copy)
    ]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_students_side_holds_no_answer(chapter):
    found = chapter_leaks(chapter)
    assert not found, (
        f"{chapter}: the student's sandbox would hold what the tests judge with (a student's "
        "module can read every file there); keep it out of PROBES_USE and out of probes, or "
        "make the probe take inputs instead (harness/strip.py):\n  " + "\n  ".join(found[:40])
    )


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_check_finds_the_answers_of_an_unstripped_file(chapter):
    """The check above is not vacuous: the real files, shipped whole, are full of answers."""
    judged = judged_files(chapter)
    for rel, j in judged.items():
        found = leaks(j, j.source)
        assert len(found) >= 5, (
            f"{rel} shipped whole shows only {found}: the leak check reads too little of what "
            "the tests judge with"
        )


def test_strip_refuses_an_undeclared_table(tmp_path):
    """A probe that uses a module-level table nobody declared is refused, not shipped with
    whatever a name analysis pulls in."""
    path = tmp_path / "test_x.py"
    path.write_text(
        "from harness.probe import probe\n"
        "from harness.target import chapter_module\n"
        'm = chapter_module("chXX", "x")\n'
        'CASES = {"a": ([1.0, 2.0], "expected label")}\n'
        "@probe\n"
        "def observe(case):\n"
        "    return m.f(CASES[case][0])\n"
    )
    with pytest.raises(strip.StripError, match=r"observe .* uses CASES"):
        strip._student_side({"exercises/chXX/test_x.py": path}, hidden=False)


def test_a_comprehension_variable_ships_nothing(tmp_path):
    """A table built with ``for k in ...`` is not "needed" by a probe with a local ``k``
    (the ch00 leak: every expected label went to the hidden sandbox)."""
    path = tmp_path / "test_x.py"
    path.write_text(
        "from harness.probe import probe\n"
        "from harness.target import chapter_module\n"
        'm = chapter_module("chXX", "x")\n'
        'CURVES = {"decay": ([0.7**k for k in range(9)], "converging")}\n'
        "@probe\n"
        "def observe(losses):\n"
        "    def counted(*a, **k):\n"
        "        return m.f(*a, **k)\n"
        "    return counted(losses)\n"
    )
    copy = strip._student_side({"exercises/chXX/test_x.py": path}, hidden=False)
    assert "converging" not in copy["exercises/chXX/test_x.py"], (
        "a table that only binds k inside its comprehension was shipped to the student's side"
    )
