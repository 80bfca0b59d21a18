"""Grade one submission: run its expected tests in sandboxes until each test has an
outcome, restarting after a crash with only the tests that had not finished.

The outcome of every expected test is one ``Record``: a test the worker reported, a
test that was running when the process ended (charged to that test), or a test that
could not run (charged with the reason). Nothing here decides points (see ``score``).
"""

from __future__ import annotations

import re
import tempfile
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import sandbox
from grader.sandbox import Limits
from harness import index

MAX_CRASHES_PER_CHAPTER = 5


# Outcomes that are no verdict on the student's code: not journaled as a grade, run
# again by the next grading run.
NOT_GRADED = "not_graded"
NOT_SUBMITTED = "not_submitted"


@dataclass
class Record:
    # passed | failed | error | skipped | crashed | timeout | not_run | not_graded
    # | not_submitted
    outcome: str
    message: str  # the full message (for a hidden test: instructor-only)
    # todo | import | timeout | crash | raised | assert | skipped | error | not_graded
    category: str = ""
    statement: str = ""  # the property the test checks, in the test's own words
    duration: float = 0.0

    to_dict = asdict


def chapter_of(nodeid: str) -> str:
    # exercises/chNN/test_x.py::... or grader/hidden/chNN/test_x_hidden.py::...
    return Path(nodeid.split("::")[0]).parent.name


def _not_graded(run: sandbox.RunResult, limits: Limits) -> str:
    """Why the trusted test process ended during a test: never the student's doing (the
    student's code runs, and is timed, in processes of its own)."""
    if run.killed == "test_timeout":
        why = "the grader's test process stopped making progress"
    elif run.killed == "wall":
        why = f"the submission's {limits.wall:g} s wall-clock backstop ran out"
    else:
        code = run.returncode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        why = f"the grader's test process ended ({how}; out of memory?)"
    return f"not graded: {why} (a busy or broken grading machine); grading again runs this test"


def _collect_problem(run: sandbox.RunResult) -> str:
    errors = [e for e in run.events if e.get("ev") == "collect_error"]
    if not errors:
        return "the test did not run"
    last = str(errors[-1].get("message", "")).strip().splitlines()
    return f"the grader could not load its test file ({last[-1] if last else 'unknown error'})"


def _neutral(message: str, root: Path) -> str:
    """Messages without the sandbox's paths, so equal failures read equal."""
    message = re.sub(rf"{re.escape(str(root))}/students/[\w.-]+/impl", "your submission", message)
    message = message.replace("/sandbox/impl", "your submission")
    return message.replace(str(root), "the sandbox")


def _ids(specs) -> list[str]:
    return [s.nodeid for s in (specs.result() if isinstance(specs, Future) else specs)]


def not_submitted(chapter: index.Chapter) -> Record:
    return Record(
        NOT_SUBMITTED,
        f"not submitted: your submission has no {chapter.id}/{chapter.module}.py",
        NOT_SUBMITTED,
    )


def grade_submission(
    impl_files: dict[str, bytes],
    chapters: list[index.Chapter],
    specs,
    limits: Limits,
    tmp_root: Path | None = None,
    only: list[str] | None = None,
) -> tuple[dict[str, Record], dict]:
    """Records for every expected test (or for the tests in ``only``), and run facts
    (restarts, seconds).

    ``specs`` is the list of expected tests, or a Future of it: while it is still being
    collected, the first run runs every test in the files and the parent sorts the
    results out afterwards (so the trusted collection overlaps the first submission).
    A chapter whose module the submission does not hold runs nothing: its tests are
    "not submitted".
    """
    records: dict[str, Record] = {}
    conflicts: set[str] = set()
    crashes: dict[str, int] = {}
    facts = {"runs": 0, "unexpected_results": 0, "seconds": 0.0}
    deadline = time.monotonic() + limits.wall
    submitted = [c for c in chapters if f"{c.id}/{c.module}.py" in impl_files]
    missing = {c.id: c for c in chapters if c not in submitted}
    pending = isinstance(specs, Future) and not specs.done() and only is None
    expected = None if pending or not submitted else _wanted(specs, only)
    if not submitted:  # nothing to run: no sandbox, no test process
        expected = _wanted(specs, only)
    remaining = None if expected is None else _to_run(expected, missing, records)
    while remaining is None or remaining:
        if time.monotonic() >= deadline:
            why = _not_graded(sandbox.RunResult(killed="wall"), limits)
            for nodeid in remaining:
                records[nodeid] = Record(NOT_GRADED, why, NOT_GRADED)
            break
        root = Path(tempfile.mkdtemp(prefix="sandbox-", dir=tmp_root))
        try:
            sandbox.build(root, submitted, impl_files)
            run = sandbox.run_once(root, submitted, remaining, limits, deadline)
        finally:
            sandbox.remove(root)
        facts["runs"] += 1
        facts["seconds"] += run.seconds
        if expected is None:
            expected = _wanted(specs, only)
            remaining = _to_run(expected, missing, records)
        wanted = set(expected)
        for event in run.events:
            nodeid = event.get("nodeid")
            if event.get("ev") != "result":
                continue
            if nodeid not in wanted:
                facts["unexpected_results"] += 1
            elif nodeid in records and nodeid not in conflicts:
                conflicts.add(nodeid)  # two results for one test: trust neither
                records[nodeid] = Record(
                    "error", "the test reported two results; the test process was tampered with"
                )
            elif nodeid not in records:
                records[nodeid] = Record(
                    str(event.get("outcome")),
                    _neutral(str(event.get("message", "")), root)[:4000],
                    str(event.get("category", "")),
                    str(event.get("statement", ""))[:500],
                    float(event.get("duration") or 0.0),
                )
        remaining = [n for n in remaining if n not in records]
        if not remaining:
            break
        if run.finished and not run.killed:
            why = _collect_problem(run)  # our own test file did not load: not the student's
            for nodeid in remaining:
                records[nodeid] = Record(
                    NOT_GRADED, f"not graded: {why}; grading again runs it", NOT_GRADED
                )
            break
        if run.killed == "wall":
            for nodeid in remaining:
                records[nodeid] = Record(NOT_GRADED, _not_graded(run, limits), NOT_GRADED)
            break
        blamed = run.started if run.started in remaining else remaining[0]
        records[blamed] = Record(NOT_GRADED, _not_graded(run, limits), NOT_GRADED)
        chapter = chapter_of(blamed)
        crashes[chapter] = crashes.get(chapter, 0) + 1
        if crashes[chapter] >= MAX_CRASHES_PER_CHAPTER:
            for nodeid in remaining:
                if chapter_of(nodeid) == chapter and nodeid not in records:
                    records[nodeid] = Record(
                        NOT_GRADED,
                        f"not graded: the grader's test process ended {crashes[chapter]} "
                        f"times in {chapter}, so the rest of the chapter was not retried; "
                        "grading again runs it",
                        NOT_GRADED,
                    )
        remaining = [n for n in remaining if n not in records]
    return {n: records[n] for n in expected}, facts


def _wanted(specs, only: list[str] | None) -> list[str]:
    ids = _ids(specs)
    return ids if only is None else [n for n in ids if n in set(only)]


def _to_run(expected: list[str], missing: dict, records: dict[str, Record]) -> list[str]:
    """The expected tests that need a run; those of chapters not submitted get their
    record here."""
    for nodeid in expected:
        chapter = chapter_of(nodeid)
        if chapter in missing:
            records[nodeid] = not_submitted(missing[chapter])
    return [n for n in expected if n not in records]
