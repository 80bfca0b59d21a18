"""The course index: one ``course/chNN.toml`` per chapter, read by the test summary,
the grader and the project's own tests.

A chapter file looks like::

    chapter = "ch02"
    title = "Autograd and gradient debugging"
    module = "autograd"              # exercises/ch02/autograd.py

    [[task]]
    id = "ch02.1"
    name = "reachable_params"        # the public function or class it is about
    kind = "inspect"                 # build | inspect | repair
    points = 3                       # sum of the points of its tests (checked)
    anchor = "course/ch02.md#reachable-params"
    hint = "Walk loss.grad_fn.next_functions; AccumulateGrad nodes hold the leaves."
"""

from __future__ import annotations

import ast
import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.target import REPO

# The skip reason of a ``cuda`` test on a machine without CUDA; the grader scores such a
# skip as "not graded here" rather than as a failure. Kept here, not in the plugin, so the
# grader's parent process never imports torch (it only starts the processes that do).
NOT_GRADED_HERE = "not graded here: needs CUDA"

COURSE = REPO / "course"
CHAPTER_ORDER = (
    "ch00 ch01 ch02 ch03 ch04 ch05 ch05a ch06 ch06a ch07 ch08 ch09 ch09a ch09b ch10".split()
)
KINDS = ("build", "inspect", "repair")


@dataclass(frozen=True)
class Task:
    id: str
    name: str
    kind: str
    points: int
    anchor: str
    hint: str


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    module: str
    tasks: tuple[Task, ...]
    preload: tuple[str, ...] = ()  # modules the grader imports once before the chapter's tests

    @property
    def public_tests(self) -> Path:
        return REPO / "exercises" / self.id / f"test_{self.module}.py"

    @property
    def hidden_tests(self) -> Path:
        return REPO / "grader" / "hidden" / self.id / f"test_{self.module}_hidden.py"

    @property
    def bugzoo(self) -> Path:
        return REPO / "grader" / "bugzoo" / self.id

    @property
    def alternatives(self) -> Path:
        """Correct answers written differently from the reference: every test must pass."""
        return REPO / "grader" / "alternatives" / self.id

    @property
    def max_points(self) -> int:
        return sum(t.points for t in self.tasks)

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(f"{self.id} has no task {task_id!r}")


def _chapter_key(chapter_id: str) -> tuple[int, str]:
    m = re.fullmatch(r"ch(\d+)([a-z]?)", chapter_id)
    return (int(m.group(1)), m.group(2)) if m else (999, chapter_id)


@cache
def chapters() -> dict[str, Chapter]:
    """Every chapter that has an index file, in course order."""
    found = {}
    for path in sorted(COURSE.glob("ch*.toml"), key=lambda p: _chapter_key(p.stem)):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        tasks = tuple(Task(**t) for t in data.get("task", []))
        found[data["chapter"]] = Chapter(
            data["chapter"], data["title"], data["module"], tasks, tuple(data.get("preload", ()))
        )
    return found


def chapter(chapter_id: str) -> Chapter:
    try:
        return chapters()[chapter_id]
    except KeyError:
        known = ", ".join(chapters()) or "none"
        raise KeyError(f"unknown chapter {chapter_id!r} (chapters: {known})") from None


def task(task_id: str) -> Task:
    return chapter(task_id.split(".")[0]).task(task_id)


def repair_sites(source: str, task_id: str) -> list[str]:
    """The top-level definitions holding a ``# TODO(<task_id>, repair)`` marker."""
    marked = [
        n for n, line in enumerate(source.splitlines(), 1) if f"TODO({task_id}, repair)" in line
    ]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and any(node.lineno <= n <= node.end_lineno for n in marked)
    ]


def definitions_digest(source: str, names: list[str]) -> str | None:
    """A fingerprint of the top-level functions or classes ``names`` in ``source``, blind
    to comments, docstrings and formatting (None if the source does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in names:
                for sub in ast.walk(node):
                    body = getattr(sub, "body", None)
                    if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                        first = body[0].value
                        if isinstance(first, ast.Constant) and isinstance(first.value, str):
                            sub.body = body[1:] or [ast.Pass()]
                found[node.name] = ast.dump(node)
    text = "\n".join(found.get(n, f"<missing {n}>") for n in names)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@cache
def untouched() -> dict[str, dict]:
    """Repair task id -> ``{"sites": [...], "digest": ...}``: where its broken program
    lives and its fingerprint as the stub ships it (``course/untouched.toml``), so the
    summary can tell "not started" from "failing"."""
    path = COURSE / "untouched.toml"
    return (
        tomllib.loads(path.read_text(encoding="utf-8")).get("repair", {}) if path.exists() else {}
    )


def untouched_table() -> dict[str, dict]:
    """What ``course/untouched.toml`` must say for the stubs as they are now."""
    table = {}
    for chapter in chapters().values():
        stub = (REPO / "exercises" / chapter.id / f"{chapter.module}.py").read_text(
            encoding="utf-8"
        )
        for task in chapter.tasks:
            if task.kind == "repair":
                sites = repair_sites(stub, task.id) or [task.name]
                table[task.id] = {"sites": sites, "digest": definitions_digest(stub, sites)}
    return table
