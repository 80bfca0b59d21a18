"""Turn per-test records into points, by the grader's own rubric.

The parent first lists the tests it expects (``expected_tests``: a trusted collect-only
run over our own test files, no submission code) and scores only those, with points
from the tests' markers. A test marked ``cuda`` that was skipped for lack of CUDA is
"not graded here": it counts neither for nor against, and not in the maximum. Any other
skip is a failure (a submission must not be able to skip its way out of a test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader import sandbox
from harness import index
from harness.plugin import NOT_GRADED_HERE, property_only


@dataclass(frozen=True)
class TestSpec:
    nodeid: str
    chapter: str
    name: str
    task: str | None
    points: int
    cuda: bool
    hidden: bool

    to_dict = asdict


@dataclass
class TestResult:
    spec: TestSpec
    status: str  # passed | failed | not_graded
    score: int
    output: str

    @property
    def max_score(self) -> int:
        return 0 if self.status == "not_graded" else self.spec.points


@dataclass
class StudentResult:
    student: str
    tests: list[TestResult]
    notes: list[str] = field(default_factory=list)
    execution_time: float = 0.0

    def chapter_score(self, chapter: str) -> tuple[int, int]:
        mine = [t for t in self.tests if t.spec.chapter == chapter]
        return sum(t.score for t in mine), sum(t.max_score for t in mine)

    @property
    def total(self) -> int:
        return sum(t.score for t in self.tests)

    @property
    def max_total(self) -> int:
        return sum(t.max_score for t in self.tests)


class CollectError(RuntimeError):
    """Our own tests could not be collected: a course bug, not a student's."""


def collect_expected(chapters: list[index.Chapter]) -> list[TestSpec]:
    """List the chosen chapters' public and hidden tests in a trusted subprocess."""
    with tempfile.TemporaryDirectory(prefix="grader-collect-") as tmp:
        root = sandbox.build(Path(tmp) / "sb", chapters, {})
        config = sandbox.worker_config(root, chapters, [], sandbox.Limits())
        config["collect_out"] = str(root / "run" / "collected.json")
        (root / "run" / "config.json").write_text(json.dumps(config))
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "MPLBACKEND": "Agg"}
        env["OMP_NUM_THREADS"] = "1"
        proc = subprocess.run(
            [
                sys.executable,
                "-E",
                "-s",
                str(root / "worker.py"),
                str(root / "run" / "config.json"),
                "--collect",
            ],
            cwd=root / "work",
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        out = root / "run" / "collected.json"
        if proc.returncode != 0 or not out.exists():
            raise CollectError(
                f"collecting the tests failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )
        data = json.loads(out.read_text())
    if data["errors"]:
        raise CollectError("collecting the tests failed:\n" + "\n".join(data["errors"]))
    hidden_prefix = "grader/hidden/"
    return [
        TestSpec(
            nodeid=t["nodeid"],
            chapter=Path(t["nodeid"].split("::")[0]).parent.name,
            name=t["name"],
            task=t["task"],
            points=t["points"],
            cuda=t["cuda"],
            hidden=t["nodeid"].startswith(hidden_prefix),
        )
        for t in data["tests"]
    ]


def score_test(spec: TestSpec, record: dict) -> TestResult:
    outcome, message = record.get("outcome"), record.get("message") or ""
    if outcome == "passed":
        return TestResult(spec, "passed", spec.points, "")
    if outcome == "skipped" and spec.cuda and message.strip().endswith(NOT_GRADED_HERE):
        return TestResult(spec, "not_graded", 0, NOT_GRADED_HERE)
    if outcome == "skipped":
        message = f"skipped, which counts as a failure: {message}"
    elif outcome == "error" and not message:
        message = "the test errored before it could check anything"
    if spec.hidden:
        message = property_only(message)
    return TestResult(spec, "failed", 0, message.strip() or f"test {outcome}")


def score_student(student: str, specs: list[TestSpec], entry: dict) -> StudentResult:
    records = entry.get("records", {})
    missing = {"outcome": "not_run", "message": "no result was recorded for this test"}
    tests = [score_test(spec, records.get(spec.nodeid, missing)) for spec in specs]
    return StudentResult(
        student, tests, list(entry.get("notes", [])), float(entry.get("execution_time", 0.0))
    )
