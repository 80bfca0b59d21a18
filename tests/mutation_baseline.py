"""What a chapter's mutation score depends on, and where it was last measured.

A mutant of one definition in ``solutions/chNN/<module>.py`` lives or dies by that
definition and by the tests that exercise it. ``fingerprints`` reduces both to one short
hash per definition: the definition itself (blind to docstrings and formatting) and, for a
definition a task names, the source of that task's tests with every module-level helper
and probe they reach (public and hidden files). Any other definition depends on all of the
chapter's tests.

``tests/mutation_baseline.json`` keeps the fingerprints of the last complete run of each
chapter and the survivors it accepted. ``python tests/mutants.py --changed`` mutates only
definitions whose fingerprint moved since then, so a change that weakens a chapter's tests
shows up as a new survivor on the next CI run, without a complete run every time.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "tests" / "mutation_baseline.json"


def _strip_docstrings(node: ast.AST) -> ast.AST:
    for sub in ast.walk(node):
        body = getattr(sub, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            first = body[0].value
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                sub.body = body[1:] or [ast.Pass()]
    return node


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _module_units(tree: ast.Module) -> dict[str, ast.stmt]:
    """Module-level name -> the statement that binds it (defs, classes, assignments)."""
    units: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            units[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        units[sub.id] = node
    return units


def _task_of(node: ast.FunctionDef, default: str | None) -> str | None:
    for dec in node.decorator_list:
        if (
            isinstance(dec, ast.Call)
            and isinstance(dec.func, ast.Attribute)
            and dec.func.attr == "task"
            and dec.args
            and isinstance(dec.args[0], ast.Constant)
        ):
            return dec.args[0].value
    return default


def _module_task(tree: ast.Module) -> str | None:
    """The task of a module-level ``pytestmark = pytest.mark.task("chNN.K")``, if any."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            for sub in ast.walk(node.value):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr == "task"
                    and sub.args
                    and isinstance(sub.args[0], ast.Constant)
                ):
                    return sub.args[0].value
    return None


def _reach(start: ast.AST, units: dict[str, ast.stmt]) -> list[str]:
    """``start`` and every module-level unit it reaches by name, dumped, in a stable order."""
    seen: dict[int, ast.stmt] = {}
    todo = [start]
    while todo:
        node = todo.pop()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in units:
                unit = units[sub.id]
                if id(unit) not in seen and unit is not start:
                    seen[id(unit)] = unit
                    todo.append(unit)
    dumps = sorted(ast.dump(_strip_docstrings(u)) for u in seen.values())
    return [ast.dump(_strip_docstrings(start)), *dumps]


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def task_test_digests(chapter, read=_read) -> tuple[dict[str, str], str]:
    """Task id -> fingerprint of its tests (with what they reach); and one of all tests."""
    per_task: dict[str, list[str]] = {}
    everything: list[str] = []
    texts = [read(p) for p in (chapter.public_tests, chapter.hidden_tests)]
    trees = [ast.parse(text) for text in texts if text is not None]
    units: dict[str, ast.stmt] = {}
    for tree in trees:  # the hidden file's own names shadow its public twin's
        units.update(_module_units(tree))
    for tree in trees:
        default = _module_task(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                parts = _reach(node, units)
                everything.extend(parts)
                task = _task_of(node, default)
                if task:
                    per_task.setdefault(task, []).extend(parts)
    return {t: _digest(sorted(p)) for t, p in per_task.items()}, _digest(sorted(everything))


def fingerprints(chapter, read=_read) -> dict[str, str]:
    """Top-level definition of the solution -> fingerprint of what its mutants depend on
    (``read(path)`` gives a file's text, None if absent: a test may hand in edited files)."""
    source = read(REPO / "solutions" / chapter.id / f"{chapter.module}.py") or ""
    tasks, all_tests = task_test_digests(chapter, read)
    by_name = {t.name: tasks.get(t.id, "<no tests>") for t in chapter.tasks}
    found = {}
    for node in ast.parse(source).body:
        name = getattr(node, "name", None)
        if name is None:
            continue
        tests = by_name.get(name, all_tests)
        found[name] = _digest([ast.dump(_strip_docstrings(node)), tests])
    return found


def load() -> dict:
    return json.loads(BASELINE.read_text()) if BASELINE.exists() else {}


def changed_definitions(chapter) -> set[str]:
    """Definitions whose fingerprint differs from the chapter's last complete run (all of
    them when the chapter has none)."""
    now = fingerprints(chapter)
    then = load().get(chapter.id, {}).get("fingerprints", {})
    return {name for name, digest in now.items() if then.get(name) != digest}


def accepted_survivors(chapter_id: str) -> set[str]:
    return set(load().get(chapter_id, {}).get("survivors", []))


def record(chapter, summary: dict, read=_read, commit: str | None = None) -> None:
    """Keep ``summary`` (a complete run of ``chapter``) as its baseline; ``read`` and
    ``commit`` when the run was made on the files of an earlier commit."""
    data = load()
    data[chapter.id] = {
        "fingerprints": fingerprints(chapter, read),
        "survivors": sorted(summary["survivors"]),
        "score": summary["score"],
        "generated": summary["generated"],
        "commit": commit,
    }
    BASELINE.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")


def record_definitions(chapter, names: set[str], summary: dict) -> None:
    """Keep a run of every mutant of the definitions ``names`` (``--only``) as their part of
    the chapter's baseline: their fingerprints and survivors are replaced, the rest kept. A
    definition's mutants live or die by its own fingerprint alone, so the other definitions'
    records stay valid."""
    data = load()
    old = data.get(chapter.id)
    if old is None:
        raise ValueError(f"{chapter.id} has no complete run to update: record one first")
    now = fingerprints(chapter)
    for name in names:
        if name in now:
            old["fingerprints"][name] = now[name]
    ours = {k for k in old["survivors"] if k.split(":", 1)[0].split(".")[0] in names}
    old["survivors"] = sorted((set(old["survivors"]) - ours) | set(summary["survivors"]))
    BASELINE.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
