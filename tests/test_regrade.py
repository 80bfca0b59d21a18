"""``_instructor/regrade.md``: rerunning ``grade`` over an existing folder says whose
score moved, by how much and why, and which tests changed verdict, and grades again
only what changed (a small ch00 class, graded once and copied for each change)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from grader import collect, grade, journal, regrade, score
from harness import index
from tests.grader_data.helpers import CH00_MAX, SOLUTION, STUB, with_override, write_submission

pytestmark = pytest.mark.timeout(900)
CHAPTERS = [index.chapter("ch00")]
STUDENTS = {
    "s1": SOLUTION,
    "s2": STUB,
    "s3": with_override("def gradient_at(w, x, target):\n    return 0.0\n"),
}


def run_grade(subs: Path, out: Path, **limits) -> str:
    found, _ = collect.discover(subs, CHAPTERS)
    progress = io.StringIO()
    grade.grade(
        found,
        out,
        CHAPTERS,
        jobs=2,
        limits=grade.default_limits(2, **limits),
        progress_stream=progress,
        gradebook=False,
    )
    return progress.getvalue()


@pytest.fixture(scope="module", autouse=True)
def steady_tests_digest():
    """The tests digest taken once per setting: work elsewhere on this checkout (an
    edited harness file) must not look like a change of tests between two runs of one
    test here, where only what the test changes should count."""
    real, seen = journal.tests_digest, {}

    def digest(chapters, settings):
        key = json.dumps([[c.id for c in chapters], settings], sort_keys=True)
        return seen.setdefault(key, real(chapters, settings))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(journal, "tests_digest", digest)
        yield


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    subs, out = tmp_path_factory.mktemp("subs"), tmp_path_factory.mktemp("out")
    for student, module in STUDENTS.items():
        write_submission(subs, student, module)
    run_grade(subs, out)
    return subs, out


@pytest.fixture
def again(first, tmp_path):
    """A copy of the first run's submissions and output folder, to change and regrade."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(first[0], subs)
    shutil.copytree(first[1], out)
    return subs, out


def moved_rows(out: Path) -> dict[str, list[str]]:
    """student -> cells of its row in the "Scores that moved" table of regrade.md."""
    text = (out / "_instructor" / "regrade.md").read_text()
    section = text.split("## Scores that moved", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in rows[2:]}


def changed_tests(out: Path) -> dict[str, list[str]]:
    with open(out / "_instructor" / "regrade.csv") as f:
        return {row["student"]: row["tests"].split("; ") for row in csv.DictReader(f)}


def test_a_first_run_writes_no_regrade_report(first):
    _, out = first
    assert not (out / "_instructor" / "regrade.md").exists()
    # the journal keeps each submission's module, for the similarity report
    entry = journal.Journal(out / ".journal").get("s2")
    assert entry["sources"] == {"ch00/training_loop.py": STUB}
    assert (out / "_instructor" / "similarity.md").is_file()


def test_an_unchanged_rerun_reuses_everything_and_says_nothing_moved(again):
    subs, out = again
    progress = run_grade(subs, out)
    assert "3 submissions unchanged since the last run: reused" in progress
    text = (out / "_instructor" / "regrade.md").read_text()
    assert "The tests digest is unchanged" in text
    assert "| 3 | unchanged (reused) |" in text
    assert "No student's score moved." in text and "No test changed verdict" in text
    assert moved_rows(out) == {}


def test_a_changed_submission_is_the_only_one_graded_and_reported(again):
    subs, out = again
    jr = journal.Journal(out / ".journal")
    kept = {s: jr.path(s).read_bytes() for s in ("s1", "s3")}
    failed_before = [
        t["name"]
        for t in json.loads((out / "s2" / "results.json").read_text())["tests"]
        if t["status"] == "failed"
    ]
    write_submission(subs, "s2", SOLUTION)
    progress = run_grade(subs, out)
    assert "2 submissions unchanged since the last run: reused" in progress
    assert {s: jr.path(s).read_bytes() for s in kept} == kept, "an unchanged entry was regraded"
    rows = moved_rows(out)
    assert set(rows) == {"s2"}
    assert rows["s2"][1:5] == [f"0/{CH00_MAX}", f"{CH00_MAX}/{CH00_MAX}", f"+{CH00_MAX}",
                               "submission changed"]  # fmt: skip
    tests = changed_tests(out)
    assert set(tests) == {"s2"}
    assert len(tests["s2"]) == len(failed_before) > 0
    assert all(t.endswith(": failed -> passed") for t in tests["s2"])
    text = (out / "_instructor" / "regrade.md").read_text()
    assert "| 1 | submission changed |" in text and "| 2 | unchanged (reused) |" in text


def test_changed_tests_regrade_everyone_and_name_the_test_that_moved(again):
    subs, out = again
    jr = journal.Journal(out / ".journal")
    # The last run's verdicts as other tests would have given them: one of s1's passing
    # tests had failed. This run's setting (the per-test time limit) also changes the
    # tests digest, as a changed test file does, so every submission is graded again.
    entry = jr.get("s1")
    nodeid = sorted(n for n, r in entry["records"].items() if r["outcome"] == "passed")[0]
    entry["records"][nodeid] = {"outcome": "failed", "message": "assert False"}
    jr.put("s1", entry)
    progress = run_grade(subs, out, test_timeout=61)
    assert "unchanged since the last run" not in progress
    text = (out / "_instructor" / "regrade.md").read_text()
    assert "**The tests digest changed**" in text and "| 3 | tests changed |" in text
    rows = moved_rows(out)
    assert set(rows) == {"s1"}
    assert rows["s1"][3] == f"+{regrade_points(out, nodeid)}"
    assert changed_tests(out) == {"s1": [f"{nodeid}: failed -> passed"]}
    name = nodeid.split("::")[1]
    assert re.search(
        rf"\| ch00 (public|hidden) `{re.escape(name)}` \| failed \| passed \| 1 \|", text
    )


def regrade_points(out: Path, nodeid: str) -> int:
    specs = journal.Journal(out / ".journal").read_meta("expected")["tests"]
    return next(t["points"] for t in specs if t["nodeid"] == nodeid)


def _entry(key: str, outcomes: dict[str, str]) -> dict:
    return {"key": key, "records": {n: {"outcome": o} for n, o in outcomes.items()}}


def test_why_each_submission_was_graded_again():
    specs = [
        score.TestSpec(f"exercises/ch00/test_t.py::test_{k}", "ch00", f"test_{k}", "ch00.1", 2,
                       False, False)
        for k in range(2)
    ]  # fmt: skip
    a, b = (s.nodeid for s in specs)
    before = regrade.Before(
        "T1",
        specs,
        {
            "same": _entry("T1:x", {a: "passed", b: "failed"}),
            "resumed": _entry("T1:y", {a: "passed", b: "not_graded"}),
            "edited": _entry("T1:z", {a: "failed", b: "failed"}),
            "left": _entry("T1:w", {a: "passed", b: "passed"}),
            "swapped": _entry("T1:u", {a: "passed", b: "failed"}),
        },
    )
    entries = {
        "same": _entry("T1:x", {a: "passed", b: "failed"}),
        "resumed": _entry("T1:y", {a: "passed", b: "passed"}),
        "edited": _entry("T1:z2", {a: "passed", b: "failed"}),
        "new": _entry("T1:v", {a: "passed", b: "passed"}),
        "swapped": _entry("T1:u2", {a: "failed", b: "passed"}),  # the same score
    }
    results = [score.score_student(s, specs, e) for s, e in sorted(entries.items())]
    found = regrade.diff(before, "T1", specs, entries, results)
    assert not found.tests_changed and found.gone == ["left"]
    assert dict(found.why_counts) == {
        "unchanged (reused)": 1,
        "tests not graded last time": 1,
        "submission changed": 2,
        "new submission": 1,
    }
    moves = {m.student: m for m in found.moves}
    assert set(moves) == {"resumed", "edited", "new", "swapped"}
    assert moves["swapped"].delta == 0
    assert moves["swapped"].tests == [(a, "passed", "failed"), (b, "failed", "passed")]
    assert moves["resumed"].tests == [(b, "not_graded", "passed")] and moves["resumed"].delta == 2
    assert moves["edited"].tests == [(a, "failed", "passed")]
    assert (moves["new"].before, moves["new"].after) == ((0, 0), (4, 4))
    text = regrade.markdown(found)
    assert "in the last run, not in this one: left" in text
    assert "| edited | 0/4 | 2/4 | +2 | submission changed |" in text
    assert "## Scores that moved (3)" in text and "| swapped |" not in text
    assert "## Tests that changed verdict (2)" in text
    assert "| ch00 public `test_0` | passed | failed | 1 |" in text
