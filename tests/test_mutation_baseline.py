"""The changed-definitions mutant check moves exactly when a definition's mutants could
live or die differently: its own code, or the tests (and their helpers) of its task."""

from __future__ import annotations

import ast
import sys

from harness import index
from harness.target import REPO

sys.path.insert(0, str(REPO / "tests"))
import mutation_baseline as mb  # noqa: E402

CHAPTER = index.chapter("ch00")
NAMES = {t.id: t.name for t in CHAPTER.tasks}
SOLUTION = REPO / "solutions" / "ch00" / f"{CHAPTER.module}.py"


def reading(edits: dict):
    """A ``read`` that sees ``edits`` (path -> text) over the repository's files."""
    return lambda path: edits[path] if path in edits else mb._read(path)


def moved(edits: dict) -> set[str]:
    before, after = mb.fingerprints(CHAPTER), mb.fingerprints(CHAPTER, reading(edits))
    return {name for name in before if before[name] != after.get(name)}


def task_definitions() -> set[str]:
    return set(NAMES.values())


def test_a_new_assertion_in_one_tasks_tests_moves_that_definition_only():
    public = CHAPTER.public_tests
    extra = (
        '\n\n@pytest.mark.task("ch00.3")\ndef test_extra():\n'
        '    assert tl.classify_curve([1.0, 0.5]) == "converging"\n'
    )
    got = moved({public: public.read_text() + extra})
    assert "classify_curve" in got, got
    assert not (got & task_definitions()) - {"classify_curve"}, got


def test_comments_and_docstrings_move_nothing():
    public = CHAPTER.public_tests
    text = public.read_text()
    tree = ast.parse(text)
    first_test = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.body)
    lines = text.splitlines(keepends=True)
    lines.insert(first_test.body[0].lineno - 1, "    # a remark\n")
    solution = SOLUTION.read_text().replace('"""', '"""Said again. ', 1)
    assert moved({public: "".join(lines), SOLUTION: solution}) == set()


def test_a_helper_a_test_reaches_moves_its_tasks_definition():
    public = CHAPTER.public_tests
    text = public.read_text()
    tree = ast.parse(text)
    helpers = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and not n.name.startswith("test_")
    }
    users = {}  # helper -> tasks of the tests that call it by name
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            task = mb._task_of(node, None)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id in helpers:
                    users.setdefault(sub.id, set()).add(task)
    name, tasks = next((h, t) for h, t in sorted(users.items()) if len(t) == 1)
    helper = helpers[name]
    lines = text.splitlines(keepends=True)
    indent = " " * helper.body[0].col_offset
    lines.insert(helper.body[0].lineno - 1, f"{indent}_unused = 1\n")
    got = moved({public: "".join(lines)})
    assert NAMES[next(iter(tasks))] in got, (name, tasks, got)


def test_a_solution_edit_moves_that_definition():
    source = SOLUTION.read_text()
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "gradient_at")
    lines = source.splitlines(keepends=True)
    indent = " " * fn.body[-1].col_offset
    lines.insert(fn.body[-1].lineno - 1, f"{indent}_unused = 1\n")
    assert moved({SOLUTION: "".join(lines)}) == {"gradient_at"}


def test_changed_definitions_against_a_baseline(tmp_path, monkeypatch):
    monkeypatch.setattr(mb, "BASELINE", tmp_path / "baseline.json")
    assert mb.changed_definitions(CHAPTER) == set(mb.fingerprints(CHAPTER))  # none recorded
    mb.record(CHAPTER, {"survivors": ["k"], "score": 1.0, "generated": 3})
    assert mb.changed_definitions(CHAPTER) == set()
    assert mb.accepted_survivors("ch00") == {"k"}
