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


@dataclass
class Record:
    outcome: str  # passed | failed | error | skipped | crashed | timeout | not_run
    message: str  # the full message (for a hidden test: instructor-only)
    category: str = ""  # todo | import | timeout | crash | raised | assert | skipped | error
    statement: str = ""  # the property the test checks, in the test's own words
    duration: float = 0.0

    to_dict = asdict


def chapter_of(nodeid: str) -> str:
    # exercises/chNN/test_x.py::... or grader/hidden/chNN/test_x_hidden.py::...
    return Path(nodeid.split("::")[0]).parent.name


def _crash_message(run: sandbox.RunResult, limits: Limits) -> tuple[str, str]:
    if run.killed == "test_timeout":
        return "timeout", (
            f"the test did not finish within {limits.test_timeout:g} s, so it was stopped "
            "(an endless loop, or a very slow call)"
        )
    if run.killed == "wall":
        return "timeout", (
            f"the submission used up its {limits.wall:g} s wall-clock limit during this test"
        )
    code = run.returncode
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
    return "crashed", (
        f"the grader's test process {how} during this test (what your code sent back may "
        "have been too large for it)"
    )


def _neutral(message: str, root: Path) -> str:
    """Messages without the sandbox's paths, so equal failures read equal."""
    message = re.sub(rf"{re.escape(str(root))}/students/[\w.-]+/impl", "your submission", message)
    message = message.replace("/sandbox/impl", "your submission")
    return message.replace(str(root), "the sandbox")


def _ids(specs) -> list[str]:
    return [s.nodeid for s in (specs.result() if isinstance(specs, Future) else specs)]


def grade_submission(
    impl_files: dict[str, bytes],
    chapters: list[index.Chapter],
    specs,
    limits: Limits,
    tmp_root: Path | None = None,
) -> tuple[dict[str, Record], dict]:
    """Records for every expected test, and run facts (restarts, seconds).

    ``specs`` is the list of expected tests, or a Future of it: while it is still being
    collected, the first run runs every test in the files and the parent sorts the
    results out afterwards (so the trusted collection overlaps the first submission).
    """
    records: dict[str, Record] = {}
    conflicts: set[str] = set()
    crashes: dict[str, int] = {}
    facts = {"runs": 0, "unexpected_results": 0, "seconds": 0.0}
    deadline = time.monotonic() + limits.wall
    pending = isinstance(specs, Future) and not specs.done()
    expected = None if pending else _ids(specs)
    remaining = expected
    while remaining is None or remaining:
        if time.monotonic() >= deadline:
            for nodeid in remaining:
                records[nodeid] = Record(
                    "not_run",
                    f"not run: the submission's {limits.wall:g} s wall-clock limit ran out",
                )
            break
        root = Path(tempfile.mkdtemp(prefix="sandbox-", dir=tmp_root))
        try:
            sandbox.build(root, chapters, impl_files)
            run = sandbox.run_once(root, chapters, remaining, limits, deadline)
        finally:
            sandbox.remove(root)
        facts["runs"] += 1
        facts["seconds"] += run.seconds
        if expected is None:
            expected = _ids(specs)
            remaining = list(expected)
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
            for nodeid in remaining:  # the session ended without running them
                records[nodeid] = Record(
                    "error", "the test did not run (its module could not be collected)"
                )
            break
        blamed = run.started if run.started in remaining else remaining[0]
        outcome, message = _crash_message(run, limits)
        records[blamed] = Record(outcome, message, "timeout" if outcome == "timeout" else "crash")
        chapter = chapter_of(blamed)
        crashes[chapter] = crashes.get(chapter, 0) + 1
        if crashes[chapter] >= MAX_CRASHES_PER_CHAPTER:
            for nodeid in remaining:
                if chapter_of(nodeid) == chapter and nodeid not in records:
                    records[nodeid] = Record(
                        "not_run",
                        f"not run: {chapter}'s tests ended the test process "
                        f"{crashes[chapter]} times, so the rest of the chapter was not retried",
                    )
        remaining = [n for n in remaining if n not in records]
    return {n: records[n] for n in expected}, facts
