"""A learner's ``grader check`` where no sandbox can be made (macOS, Windows, or Linux
with neither namespaces nor Landlock): the public and hidden tests run here, in this
one process beside the learner's own code, as their own ``pytest exercises/chNN`` does,
and come back as the same ``run.Record`` per test that a split run gives, so the score
and the feedback are made the same way.

Nothing here isolates anything: a module that exits or loops forever ends this check
too. It is for checking one's own work, never for grading someone else's (``grade``
refuses without a sandbox).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from grader import run
from harness import index
from harness.target import REPO


def test_files(chapters: list[index.Chapter]) -> list[str]:
    return [
        str(p.relative_to(REPO))
        for c in chapters
        for p in (c.public_tests, c.hidden_tests)
        if p.exists()
    ]


def grade_here(folder: Path, chapters: list[index.Chapter], expected: list[str]) -> dict:
    """``run.Record`` for each test of ``expected``, run in this process against the
    modules in ``folder`` (shaped like exercises/)."""
    import pytest

    from grader.verdict import Reporter

    with tempfile.TemporaryFile() as log:
        reporter = Reporter(log.fileno(), expected)
        cwd = Path.cwd()
        os.chdir(REPO)
        try:
            pytest.main(
                [*test_files(chapters), "--impl", str(folder), "-p", "harness.plugin",
                 "-p", "no:cacheprovider", "--noconftest", "--import-mode=importlib", "-q",
                 "--color=no", "--no-header", "--no-summary", "-o", "addopts="],
                plugins=[reporter],
            )  # fmt: skip
        finally:
            os.chdir(cwd)
        log.seek(0)
        events = [json.loads(line) for line in log.read().decode().splitlines() if line]
    records = {}
    for event in events:
        if event.get("ev") == "result" and event.get("nodeid") in expected:
            records[event["nodeid"]] = run.Record(
                str(event["outcome"]),
                str(event.get("message", ""))[:4000],
                str(event.get("category", "")),
                str(event.get("statement", ""))[:500],
                float(event.get("duration") or 0.0),
            )
    why = "not run: the check ended before this test (this machine has no sandbox to restart)"
    return {n: records.get(n) or run.Record("error", why, "error") for n in expected}
