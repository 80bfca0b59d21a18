"""Turn per-test records into points, by the grader's own rubric.

The parent first lists the tests it expects (``expected_tests``: a trusted collect-only
run over our own test files, no submission code) and scores only those, with points
from the tests' markers. A test marked ``cuda`` that was skipped for lack of CUDA is
"not graded here": it counts neither for nor against, and not in the maximum. Any other
skip is a failure (a submission must not be able to skip its way out of a test).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader import sandbox, warm
from harness import index
from harness.index import NOT_GRADED_HERE
from harness.target import REPO


@dataclass(frozen=True)
class TestSpec:
    nodeid: str
    chapter: str
    name: str
    task: str | None
    points: int
    cuda: bool
    hidden: bool
    statement: str = ""  # the property it checks, in the test's own words

    to_dict = asdict


@dataclass
class TestResult:
    """One test's grade. CUDA-marked tests count for nothing on any machine (checked and
    reported where a GPU is present, "not graded here" elsewhere), so a grade and its
    maximum mean the same whoever grades."""

    spec: TestSpec
    # passed | failed | not_submitted (no module: 0 points) | not_graded (the grader
    # could not run it: no verdict yet) | not_here (a CUDA test without a GPU: 0 of 0)
    status: str
    score: int
    output: str  # what the student sees
    detail: str = ""  # the full failure message (differs from output for hidden tests)
    # how it failed: todo | import | timeout | crash | tampering | raised | assert | error
    # | skipped (empty when it passed, or had no verdict)
    category: str = ""

    @property
    def max_score(self) -> int:
        return 0 if self.spec.cuda else self.spec.points

    @property
    def graded(self) -> bool:
        """A verdict on the student's code (not a grader failure)."""
        return self.status != "not_graded"


@dataclass
class StudentResult:
    student: str  # the internal id (``collect.student_id``): output folder, journal key
    tests: list[TestResult]
    notes: list[str] = field(default_factory=list)
    execution_time: float = 0.0
    name: str = ""  # the name as submitted; every output shows it (escaped)
    flags: list[str] = field(default_factory=list)  # for the instructor (``collect``)

    @property
    def shown(self) -> str:
        """The student as every output names them: the name as submitted."""
        return self.name or self.student

    def chapter_score(self, chapter: str) -> tuple[int, int]:
        mine = [t for t in self.tests if t.spec.chapter == chapter]
        return sum(t.score for t in mine), sum(t.max_score for t in mine)

    def chapter_status(self, chapter: str) -> str:
        """``graded``, ``not submitted`` or ``not graded`` (some of its tests have no
        verdict: the grader's failure, run again by the next grading run)."""
        mine = [t for t in self.tests if t.spec.chapter == chapter and t.max_score]
        if any(t.status == "not_graded" for t in mine):
            return "not graded"
        if mine and all(t.status == "not_submitted" for t in mine):
            return "not submitted"
        return "graded"

    @property
    def not_graded(self) -> list[TestResult]:
        return [t for t in self.tests if t.status == "not_graded"]

    @property
    def total(self) -> int:
        return sum(t.score for t in self.tests)

    @property
    def max_total(self) -> int:
        return sum(t.max_score for t in self.tests)


class CollectError(RuntimeError):
    """Our own tests could not be collected: a course bug, not a student's."""


def collect_expected(chapters: list[index.Chapter]) -> list[TestSpec]:
    """List the chosen chapters' public and hidden tests in a trusted subprocess (our
    own test files from the repository; no submission takes part)."""
    with tempfile.TemporaryDirectory(prefix="grader-collect-") as tmp:
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n")
        config = {
            "test_files": [str(p) for c in chapters for p in sandbox.chapter_files(c)],
            "ini": str(ini),
            "rootdir": str(REPO),
            "collect_out": str(Path(tmp) / "collected.json"),
        }
        (Path(tmp) / "config.json").write_text(json.dumps(config))
        argv = [str(Path(tmp) / "config.json"), "--collect"]
        # forked from the warm parent the chapters' runs are forked from: no import paid
        code, printed = warm.run(argv, sandbox.trusted_env(1), 600, sandbox.preload(chapters))
        out = Path(config["collect_out"])
        if code != 0 or not out.exists():
            raise CollectError(f"collecting the tests failed:\n{printed[-6000:]}")
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
            statement=t.get("statement", ""),
        )
        for t in data["tests"]
    ]


CUDA_NOT_GRADED = (
    "not graded on this machine: this test needs a CUDA GPU (CUDA tests count 0 of 0 "
    "points on every machine, so grades compare across machines)"
)
CUDA_COUNTED = "checked on this machine's GPU; CUDA tests count 0 of 0 points on every machine"


# What a hidden test's visible report says besides its statement: fixed words, never
# anything the student's code produced (a hidden-phase process may have read the
# hidden probes, so nothing it wrote is shown to the student).
HIDDEN_CATEGORY = {
    "todo": "not implemented yet",
    "import": "your module could not be imported (the public tests show why)",
    "timeout": "your code did not finish in time",
    "crash": "your code ended its process",
    "tampering": "tampering: the process running your code did not answer as the tests expect",
    "raised": "your code raised an error",
    "assert": "not true of your code",
    "error": "could not run",
    "skipped": "was skipped, which counts as a failure",
}


def score_test(spec: TestSpec, record: dict) -> TestResult:
    """Points and the student-visible output of one test (the full message of a hidden
    test stays in ``TestResult.detail``, for the instructor)."""
    outcome, message = record.get("outcome"), record.get("message") or ""
    if outcome == "skipped" and spec.cuda and message.strip().endswith(NOT_GRADED_HERE):
        return TestResult(spec, "not_here", 0, CUDA_NOT_GRADED)
    if outcome in ("not_graded", "not_submitted"):  # the message is the grader's own
        return TestResult(spec, outcome, 0, message, message)
    if outcome == "passed":
        return TestResult(
            spec, "passed", 0 if spec.cuda else spec.points, CUDA_COUNTED if spec.cuda else ""
        )
    if outcome == "skipped":
        message = f"skipped, which counts as a failure: {message}"
    elif outcome == "error" and not message:
        message = "the test errored before it could check anything"
    detail = message.strip() or f"test {outcome}"
    category = record.get("category") or ("skipped" if outcome == "skipped" else "error")
    if outcome in ("timeout", "crashed"):
        category = "timeout" if outcome == "timeout" else "crash"
    if outcome == "not_run":
        category = "error"
    if not spec.hidden:
        return TestResult(spec, "failed", 0, detail, detail, category)
    statement = spec.statement or record.get("statement") or spec.name
    visible = f"{statement.rstrip('.')} — {HIDDEN_CATEGORY.get(category, 'not true of your code')}"
    return TestResult(spec, "failed", 0, visible, detail, category)


def score_student(student: str, specs: list[TestSpec], entry: dict) -> StudentResult:
    records = entry.get("records", {})
    missing = {
        "outcome": "not_graded",
        "message": "not graded: the grader recorded no result for this test; grading again runs it",
    }
    tests = [score_test(spec, records.get(spec.nodeid, missing)) for spec in specs]
    return StudentResult(
        student,
        tests,
        list(entry.get("notes", [])),
        float(entry.get("execution_time", 0.0)),
        str(entry.get("name") or ""),
        list(entry.get("flags", [])),
    )
