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

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.target import REPO

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
        data = tomllib.loads(path.read_text())
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
