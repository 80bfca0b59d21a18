"""The instructor's pictures, each drawn from a small table of counts that the tests read.

- ``score_distribution.png``: students per chapter and score band, where *not
  submitted* (no module), *not graded* (the grader's failure, no verdict yet), a zero,
  partial marks in four bands and full marks are columns of their own.
- ``task_losses.png``: per task, the share of the class's points for it that were lost,
  split by the state each student's task is in (``task_table``, which the summary's
  task table reads too): failed, not started (the stub's "not implemented"), blocked (a
  task it relies on fails or is not written: the course index's ``task_states``, as the
  student's own test summary says), not run (the module does not import), not
  submitted, not graded.

Both stay the same size whatever the class size (they count students, never list them).
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

from grader.score import StudentResult, TestResult
from harness import index

BINS = ("not submitted", "not graded", "0", "1–24%", "25–49%", "50–74%", "75–99%", "100%")
# The state of one student's task; every state but "done" can lose points.
STATES = ("done", "failed", "not started", "blocked", "not run", "not submitted", "not graded")
LOSSES = STATES[1:]
LOSS_COLOURS = ("#c0392b", "#f0b27a", "#8e44ad", "#6c3483", "#aab7b8", "#5dade2")
# The course index's words for what the grader calls failed.
_INDEX_STATES = {"failing": "failed"}


def band(result: StudentResult, chapter: str) -> str:
    """The column of ``score_distribution.png`` that ``result``'s chapter falls in."""
    status = result.chapter_status(chapter)
    if status != "graded":
        return status
    got, most = result.chapter_score(chapter)
    if most == 0 or got == 0:
        return "0"
    if got >= most:
        return "100%"
    return BINS[3 + min(3, int(4 * got / most))]


def chapter_bands(results: list[StudentResult], chapters: list[str]) -> dict[str, Counter]:
    """chapter -> band -> number of students."""
    return {c: Counter(band(r, c) for r in results) for c in chapters}


def task_states(result: StudentResult) -> dict[str, str]:
    """The state of each of ``result``'s tasks (their tests that carry points): not
    submitted (no module), not graded (some test has no verdict yet), else the course
    index's own judgement (``harness.index.task_states``, what the student's test summary
    says): done, failed, not started, blocked (by a task it relies on that fails or is
    not written) or not run (the module does not import)."""
    per_task: dict[str, list[TestResult]] = {}
    for t in result.tests:
        if t.spec.task and t.max_score:
            per_task.setdefault(t.spec.task, []).append(t)
    states, outcomes = {}, []
    for task, tests in per_task.items():
        if all(t.status == "not_submitted" for t in tests):
            states[task] = "not submitted"
        elif any(t.status == "not_graded" for t in tests):
            states[task] = "not graded"
        else:
            outcomes += [
                index.TestOutcome(
                    task, t.status if t.status == "passed" else "failed", t.category, t.output
                )
                for t in tests
            ]
    for task, state in index.task_states(outcomes).items():
        states[task] = _INDEX_STATES.get(state.status, state.status)
    return states


def task_table(results: list[StudentResult]) -> dict[str, dict[str, int]]:
    """task -> {"points": the class's points for it, "lost": the points lost, and per
    state in ``STATES`` the number of students (``state``) and the points they lost
    (``lost state``)}; tasks in course order (the order of the tests). The one source of
    the summary's task table and of ``task_losses.png``."""
    table: dict[str, dict[str, int]] = {}
    for r in results:
        per_task: dict[str, list[TestResult]] = {}
        for t in r.tests:
            if t.spec.task and t.max_score:
                per_task.setdefault(t.spec.task, []).append(t)
        states = task_states(r)
        for task, tests in per_task.items():
            row = table.setdefault(
                task,
                {"points": 0, "lost": 0}
                | dict.fromkeys(STATES, 0)
                | dict.fromkeys((f"lost {s}" for s in STATES), 0),
            )
            state = states[task]
            lost = sum(t.max_score - t.score for t in tests)
            row["points"] += sum(t.max_score for t in tests)
            row["lost"] += lost
            row[state] += 1
            row[f"lost {state}"] += lost
    return table


def task_losses(results: list[StudentResult]) -> dict[str, dict[str, int]]:
    """task -> {"points": ..., and per state in ``LOSSES`` the points lost in it}: what
    ``task_losses.png`` draws, read from ``task_table``."""
    return {
        task: {"points": row["points"]} | {why: row[f"lost {why}"] for why in LOSSES}
        for task, row in task_table(results).items()
    }


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def preload() -> threading.Thread:
    """Import matplotlib (seconds) in the background, while something else waits on
    other processes (the grading), so drawing the figures later does not pay for it."""
    thread = threading.Thread(target=_pyplot, name="preload-matplotlib", daemon=True)
    thread.start()
    return thread


def score_figure(results: list[StudentResult], chapters: list[str], path: Path) -> None:
    """Students per chapter and score band, as a table of counts (readable at 5 or 500)."""
    import numpy as np

    plt = _pyplot()
    bands = chapter_bands(results, chapters)
    counts = np.array([[bands[c][b] for b in BINS] for c in chapters], dtype=int).reshape(
        len(chapters), len(BINS)
    )
    n = max(1, len(results))
    top = max(1, counts.max(initial=0))
    fig, ax = plt.subplots(figsize=(9.5, 0.45 * len(chapters) + 1.6))
    ax.imshow(counts / n, cmap="Blues", vmin=0, vmax=max(0.2, top / n), aspect="auto")
    for i in range(len(chapters)):
        for j in range(len(BINS)):
            if counts[i, j]:
                dark = counts[i, j] / top > 0.6
                ax.text(
                    j,
                    i,
                    str(counts[i, j]),
                    ha="center",
                    va="center",
                    color="white" if dark else "black",
                    fontsize=9,
                )
    ax.set_xticks(range(len(BINS)), BINS)
    ax.set_yticks(range(len(chapters)), chapters)
    ax.set_xlabel("share of the chapter's points")
    ax.set_title(f"Students per chapter and score band ({len(results)} submissions)")
    ax.tick_params(length=0)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def task_figure(results: list[StudentResult], path: Path) -> None:
    """Per task, the share of the class's points lost, stacked by why."""
    plt = _pyplot()
    table = task_losses(results)
    tasks = list(table)
    fig, ax = plt.subplots(figsize=(9.5, 0.3 * len(tasks) + 1.8))
    left = [0.0] * len(tasks)
    for why, colour in zip(LOSSES, LOSS_COLOURS):
        shares = [table[t][why] / table[t]["points"] for t in tasks]
        ax.barh(range(len(tasks)), shares, left=left, color=colour, label=why, height=0.7)
        left = [a + b for a, b in zip(left, shares)]
    for i, lost in enumerate(left):
        if lost:
            ax.text(lost + 0.01, i, f"{lost:.0%}", va="center", fontsize=8)
    ax.set_yticks(range(len(tasks)), tasks)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("share of the class's points for the task that were lost")
    ax.set_title(f"Where the class lost points, per task ({len(results)} submissions)")
    if tasks:
        ax.legend(loc="lower right", fontsize=8, ncols=len(LOSSES))
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
