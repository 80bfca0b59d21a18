"""The instructor's pictures, checked from the counts they are drawn from: the score
figure tells not submitted, not graded, zero, partial and full marks apart; the per-task
view splits the points the class lost by why. And every instructor output stays readable
for a generated class of 500 (bounded tables, files of a reasonable size)."""

from __future__ import annotations

import csv
import random
import re
import struct
from collections import Counter
from pathlib import Path

import pytest

from grader import figures, outputs, regrade, report, score, similarity
from harness import index

pytestmark = pytest.mark.timeout(600)
CHAPTERS = ["ch00", "ch01"]


def specs() -> list[score.TestSpec]:
    """Per chapter, two tasks of two tests each, 2 points a test (8 a chapter)."""
    found = []
    for chapter in CHAPTERS:
        for k in range(4):
            found.append(
                score.TestSpec(
                    f"exercises/{chapter}/test_x.py::test_{k}",
                    chapter,
                    f"test_{k}",
                    f"{chapter}.{k // 2 + 1}",
                    2,
                    False,
                    k == 3,
                    f"property {k}.",
                )
            )
    return found


PASSED = {"outcome": "passed"}
FAILED = {"outcome": "failed", "category": "assert", "message": "expected 4, got 5"}
TODO = {"outcome": "failed", "category": "todo", "message": "TODO: implement ch00.1"}
MISSING = {"outcome": "not_submitted", "message": "not submitted: no ch00/x.py"}
LOST = {"outcome": "not_graded", "message": "not graded: the sandbox did not start"}
IMPORT = {"outcome": "failed", "category": "import", "message": "importing ch00/x.py failed"}


def result(student: str, ch00: list[dict], ch01: list[dict] | None = None) -> score.StudentResult:
    """A student whose four ch00 tests got ``ch00`` (and ch01's four got ``ch01``)."""
    outcomes = ch00 + (ch01 or [PASSED] * 4)
    records = {s.nodeid: r for s, r in zip(specs(), outcomes)}
    return score.score_student(student, specs(), {"records": records})


def test_the_score_figure_tells_each_state_apart():
    results = [
        result("missing", [MISSING] * 4),
        result("lost", [PASSED, PASSED, PASSED, LOST]),
        result("zero", [FAILED] * 4),
        result("todo", [TODO] * 4),
        result("quarter", [PASSED, FAILED, FAILED, FAILED]),
        result("half", [PASSED, PASSED, FAILED, FAILED]),
        result("most", [PASSED, PASSED, PASSED, FAILED]),
        result("full", [PASSED] * 4),
        result("full2", [PASSED] * 4),
    ]
    bands = figures.chapter_bands(results, CHAPTERS)
    assert bands["ch00"] == Counter(
        {
            "not submitted": 1,
            "not graded": 1,
            "0": 2,
            "25–49%": 1,
            "50–74%": 1,
            "75–99%": 1,
            "100%": 2,
        }
    )
    assert bands["ch01"] == Counter({"100%": 9})
    assert set(bands["ch00"]) <= set(figures.BINS)
    # a student who submitted nothing is not a zero, nor is a test the grader lost
    assert figures.band(results[0], "ch00") != figures.band(results[2], "ch00")
    assert figures.band(results[1], "ch00") == "not graded"


def test_each_students_task_has_one_state_and_the_view_splits_lost_points_by_it():
    results = [
        result("missing", [MISSING] * 4),
        result("lost", [PASSED, PASSED, PASSED, LOST]),
        result("todo", [TODO, TODO, FAILED, PASSED]),
        result("broken", [IMPORT] * 4),
        result("full", [PASSED] * 4),
    ]
    states = {r.student: [figures.task_states(r)[t] for t in ("ch00.1", "ch00.2")] for r in results}
    assert states == {
        "missing": ["not submitted", "not submitted"],
        "lost": ["done", "not graded"],
        "todo": ["not started", "failed"],  # ch00.2: one passed, one failed
        "broken": ["not run", "not run"],
        "full": ["done", "done"],
    }
    table = figures.task_losses(results)
    assert list(table) == ["ch00.1", "ch00.2", "ch01.1", "ch01.2"]  # course order
    assert table["ch00.1"] == {"points": 20} | dict.fromkeys(figures.LOSSES, 0) | {
        "not started": 4,
        "not run": 4,
        "not submitted": 4,
    }
    # a task with one test not graded is "not graded" as a whole: its lost points too
    assert table["ch00.2"] == {"points": 20} | dict.fromkeys(figures.LOSSES, 0) | {
        "failed": 2,
        "not run": 4,
        "not submitted": 4,
        "not graded": 2,
    }
    assert table["ch01.1"] == {"points": 20} | dict.fromkeys(figures.LOSSES, 0)


def test_a_task_that_relies_on_a_failing_task_is_blocked_as_the_student_is_told():
    """ch03.7's tests run ch03.2's code (course/ch03.toml ``uses``): with ch03.2 failing,
    ch03.7 is blocked by it, in the instructor's table as in the student's summary."""
    assert "ch03.2" in index.relies_on("ch03.7")
    tasks = {"ch03.2": [FAILED, PASSED], "ch03.7": [FAILED, FAILED]}
    specs_ = [
        score.TestSpec(
            f"exercises/ch03/test_x.py::test_{t}_{k}", "ch03", f"t{k}", t, 2, False, False
        )
        for t, outcomes in tasks.items()
        for k in range(len(outcomes))
    ]
    records = {s.nodeid: r for s, r in zip(specs_, [r for rs in tasks.values() for r in rs])}
    r = score.score_student("ann", specs_, {"records": records})
    assert figures.task_states(r) == {"ch03.2": "failed", "ch03.7": "blocked"}
    assert figures.task_table([r])["ch03.7"]["lost blocked"] == 4


def test_the_summarys_task_table_is_the_figures_table():
    """One source for both: each row's counts of students per state, and its lost points,
    are those the figure is drawn from."""
    results = [
        result("missing", [MISSING] * 4),
        result("lost", [PASSED, PASSED, PASSED, LOST]),
        result("todo", [TODO, TODO, FAILED, PASSED], [TODO] * 4),
        result("broken", [IMPORT] * 4, [FAILED] * 4),
        result("full", [PASSED] * 4),
    ]
    lines = report.tasks_table(results)
    header = next(line for line in lines if line.startswith("| task |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[4:] == list(figures.STATES)
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if re.fullmatch(r"ch\d+\.\d+", cells[0]):
            rows[cells[0]] = dict(zip(columns, cells))
    table, losses = figures.task_table(results), figures.task_losses(results)
    assert set(rows) == set(table)
    for task, row in rows.items():
        assert (
            int(row["lost (class)"])
            == table[task]["lost"]
            == sum(losses[task][why] for why in figures.LOSSES)
        )
        for state in figures.STATES:
            assert int(row[state]) == table[task][state], (task, state)
        assert sum(int(row[s]) for s in figures.STATES) == len(results)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def test_both_figures_are_written_and_linked_from_the_summary(tmp_path):
    results = [result("a", [PASSED] * 4), result("b", [TODO] * 4, [FAILED] * 4)]
    outputs.write_reports(tmp_path, results, CHAPTERS)
    for name in ("score_distribution.png", "task_losses.png"):
        width, height = png_size(tmp_path / name)
        assert 300 < width < 2000 and 100 < height < 2000
        assert f"]({name})" in (tmp_path / "summary.md").read_text()
    assert "task_losses.png" in report.RUN_FILES  # no student folder can take its name


# ---- 500 students --------------------------------------------------------------------


def program(rng: random.Random) -> str:
    """A module of this student's own: four functions of random arithmetic."""
    lines = []
    for f in range(4):
        lines += [f"def f{f}(a, b):"]
        for _ in range(6):
            a, b = rng.randint(0, 9999), rng.randint(0, 9999)
            lines.append(f"    a = a {rng.choice('+-*')} {a} {rng.choice('+-*')} b * {b}")
        lines += ["    return a", "", ""]
    return "\n".join(lines)


def big_class(n: int = 500, copies: int = 30):
    rng = random.Random(500)
    outcomes = [PASSED, FAILED, TODO, MISSING, LOST]
    weights = [50, 25, 15, 8, 2]
    results = [
        result(
            f"student{k:03d}",
            rng.choices(outcomes, weights, k=4),
            rng.choices(outcomes, weights, k=4),
        )
        for k in range(n)
    ]
    for r in results[:40]:
        r.notes.append("ch00/x.py: a symbolic link; ignored (submit the file itself)")
    codes = {r.student: program(rng) for r in results}
    for k in range(copies):  # student(k+100) hands in student(k)'s module
        codes[f"student{k + 100:03d}"] = codes[f"student{k:03d}"].replace("a", "q")
    return results, codes


def test_outputs_stay_readable_at_500_students(tmp_path):
    results, codes = big_class()
    chapter = index.chapter("ch00")
    sources = {s: {f"ch00/{chapter.module}.py": code} for s, code in codes.items()}
    found = similarity.find(sources, [chapter])
    if not found.skipped:
        assert {(p.a, p.b) for p in found.pairs} == {
            (f"student{k:03d}", f"student{k + 100:03d}") for k in range(30)
        }
    outputs.write_reports(tmp_path, results, CHAPTERS, similar=found)

    summary = (tmp_path / "summary.md").read_text()
    assert len(summary.splitlines()) < 130, len(summary.splitlines())
    assert len(summary) < 32_000
    assert re.search(r"\.\.\. and \d+ more \(see their feedback\.md\)", summary)
    if not found.skipped:
        assert "## Similar submissions" in summary
        assert "... and 20 more pairs" in summary  # 30 flagged, 10 shown
        own = (tmp_path / "_instructor" / "similarity.md").read_text()
        assert len(own.splitlines()) < 60 and "... and 10 more in `similarity.csv`" in own
        with open(tmp_path / "_instructor" / "similarity.csv") as f:
            assert len(list(csv.DictReader(f))) == 30  # the CSV has them all

    for name in ("score_distribution.png", "task_losses.png"):
        width, height = png_size(tmp_path / name)
        assert width < 2000 and height < 2000
        assert (tmp_path / name).stat().st_size < 300_000
    assert sum(figures.chapter_bands(results, CHAPTERS)["ch00"].values()) == 500

    # a regrade that moved every score: bounded too, and the CSV has everyone
    specs_ = specs()
    before = regrade.Before(
        "old", specs_, {r.student: {"key": "old:x", "records": {}} for r in results}
    )
    entries = {r.student: {"key": "new:x"} for r in results}
    changes = regrade.diff(before, "new", specs_, entries, results)
    regrade.write(tmp_path / "_instructor", changes)
    text = (tmp_path / "_instructor" / "regrade.md").read_text()
    assert len(text.splitlines()) < 110 and len(text) < 40_000
    assert "more students in `regrade.csv`" in text
    with open(tmp_path / "_instructor" / "regrade.csv") as f:
        assert len(list(csv.DictReader(f))) == len(changes.moves) > 400
