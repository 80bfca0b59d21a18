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
    hint = "The graph is a chain of backward nodes; the ones that accumulate into leaves name them."
    fix_rot13 = "..."                # level 2, the fix itself: rot13, so it is never read by accident
    uses = []                        # tasks of this chapter whose code this one's tests rely on
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import re
import tomllib
from collections.abc import Iterable
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
    hint: str  # level 1: the mechanism to look at, never the code (shown with a failing task)
    fix: str = ""  # level 2: the fix itself, only on request (stored rot13 as ``fix_rot13``)
    uses: tuple[str, ...] = ()  # tasks whose code this task's tests run (direct)

    @classmethod
    def from_toml(cls, entry: dict) -> Task:
        entry = dict(entry)
        fix = codecs.decode(entry.pop("fix_rot13", ""), "rot13")
        return cls(fix=fix, uses=tuple(entry.pop("uses", ())), **entry)


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
        tasks = tuple(Task.from_toml(t) for t in data.get("task", []))
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


# ---- which task waits on which: the task table of a run ------------------------------


def task_key(task_id: str) -> tuple:
    """Course order of task ids (ch02.10 after ch02.9)."""
    chapter_id, _, number = task_id.partition(".")
    return (*_chapter_key(chapter_id), int(number) if number.isdigit() else 0)


def relies_on(task_id: str) -> tuple[str, ...]:
    """Every task whose code ``task_id``'s tests run: its ``uses``, theirs, and so on
    (nothing for a task the index does not know)."""
    seen: set[str] = set()
    stack = [task_id]
    while stack:
        try:
            uses = task(stack.pop()).uses
        except KeyError:
            continue
        fresh = [t for t in uses if t not in seen and t != task_id]
        seen.update(fresh)
        stack += fresh
    return tuple(sorted(seen, key=task_key))


TODO_TASK = re.compile(r"TODO: implement (ch\d+[a-z]?\.\d+)\b")


@dataclass(frozen=True)
class TestOutcome:
    """One test's result as the task table sees it."""

    task: str
    outcome: str  # passed | failed | skipped
    category: str = ""  # how it failed (harness.plugin.failure_category)
    message: str = ""  # what the student was shown


@dataclass(frozen=True)
class TaskState:
    id: str
    passed: int
    graded: int
    # done | failing | not started | blocked (a task it relies on is in trouble) | not run
    # (the chapter's module does not import)
    status: str
    blocker: str | None = None
    blocker_unwritten: bool = False

    def describe(self) -> str:
        if self.status == "done":
            return "done"
        if self.status == "not started":
            return "not started (TODO)"
        if self.status == "not run":
            return "not run: the module does not import"
        if self.status == "blocked":
            return f"blocked by {self.blocker} {task(self.blocker).name}"
        return f"{self.passed}/{self.graded} tests pass"

    def lead(self) -> str:
        """The sentence a blocked task's failures start with."""
        other = task(self.blocker)
        why = "is not written yet" if self.blocker_unwritten else "fails its own tests"
        act = "write" if self.blocker_unwritten else "fix"
        return (
            f"{self.id} {task(self.id).name} depends on {other.id} {other.name}, which {why} "
            f"— {act} it first"
        )


def task_states(
    outcomes: Iterable[TestOutcome], changed: dict[str, bool] | None = None
) -> dict[str, TaskState]:
    """Per task: done, failing, not started, blocked by the first task it relies on that
    fails or is unwritten, or not run. ``changed`` says, per repair task, whether its broken
    program was changed (an unchanged one is "not started")."""
    tests: dict[str, list[TestOutcome]] = {}
    for o in outcomes:
        tests.setdefault(o.task, []).append(o)
    first: dict[str, tuple[str, int, int, set[str]]] = {}
    for task_id, mine in tests.items():
        graded = [o for o in mine if o.outcome != "skipped"]
        failed = [o for o in graded if o.outcome != "passed"]
        todos = [TODO_TASK.search(o.message) for o in failed if o.category == "todo"]
        named = {m.group(1) for m in todos if m}
        unwritten = any(m is None or m.group(1) == task_id for m in todos)
        if changed is not None and task_id in changed:
            unwritten = not changed[task_id]
        if not failed:
            status = "done"
        elif all(o.category == "import" for o in failed):
            status = "not run"
        elif unwritten:
            status = "not started"
        else:
            status = "failing"
        others = {t for t in named - {task_id} if _known(t)}
        first[task_id] = (status, len(graded) - len(failed), len(graded), others)
    trouble = {
        t: s == "not started" for t, (s, *_) in first.items() if s in ("failing", "not started")
    }
    states = {}
    for task_id, (status, passed, graded, named) in first.items():
        blocker = None
        if status == "failing":
            blocker = _first_cause(task_id, trouble, named)
        if blocker:
            states[task_id] = TaskState(
                task_id, passed, graded, "blocked", blocker, trouble.get(blocker, True)
            )  # a task named by a TODO its tests met may have no tests in this run
        else:
            states[task_id] = TaskState(task_id, passed, graded, status)
    return states


def _known(task_id: str) -> bool:
    try:
        task(task_id)
    except KeyError:
        return False
    return True


def _first_cause(task_id: str, trouble: dict[str, bool], named: set[str]) -> str | None:
    """The task to fix first: one ``task_id`` relies on (or whose TODO its tests met) that is
    in trouble and does not itself wait on another such task. Of two tasks that rely on each
    other, the later in the course waits on the earlier, never the other way round."""
    candidates = sorted(
        {t for t in relies_on(task_id) if t in trouble and waits(task_id, t)} | named,
        key=task_key,
    )
    roots = [u for u in candidates if not any(v != u and waits(u, v) for v in candidates)]
    return roots[0] if roots else None


def waits(task_id: str, other: str) -> bool:
    """Whether ``task_id`` waits on ``other``: it relies on it, and ``other`` does not rely
    on it back unless ``other`` comes first in the course."""
    if other not in relies_on(task_id):
        return False
    return task_id not in relies_on(other) or task_key(other) < task_key(task_id)


def hint_text(task_id: str, level: int = 2) -> str:
    """What ``python -m grader hint`` prints: the task, its reading, its hint, and at level 2
    the fix itself."""
    t = task(task_id)
    lines = [f"{t.id} {t.name} — read {t.anchor}", f"hint: {t.hint}"]
    if level >= 2 and t.fix:
        lines.append(f"fix:  {t.fix}")
    return "\n".join(lines)
