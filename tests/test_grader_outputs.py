"""The grader's outputs on a small class (ch00, two jobs): grades.csv, Gradescope
results.json, feedback.md, the instructor summary and figure, and an nbgrader gradebook
that the real ``nbgrader export`` reads with the same totals. One run serves all."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader import collect, demo, grade, gradebook
from harness import index
from tests.grader_data.helpers import CH00_MAX, SOLUTION, STUB, grades, results, write_submission

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("out")
    write_submission(subs, "alice", SOLUTION)
    write_submission(subs, "bob", STUB)
    (subs / "ben").mkdir()
    (subs / "ben" / "ch00").mkdir()
    (subs / "ben" / "ch00" / "training_loop.py").write_text(
        (Path(demo.__file__).parent / "ben" / "ch00" / "training_loop.py").read_text()
    )
    write_submission(subs, "carol", STUB)  # the same failures as bob: clustered
    chapters = [index.chapter("ch00")]
    found, _ = collect.discover(subs, chapters)
    progress = io.StringIO()
    grade.grade(found, out, chapters, jobs=2, progress_stream=progress, gradebook=True)
    return out, progress.getvalue()


def test_grades_csv_has_one_row_per_student_and_chapter_columns(graded):
    out, _ = graded
    with open(out / "grades.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student", "ch00", "total", "max"]
    table = grades(out)
    assert sorted(table) == ["alice", "ben", "bob", "carol"]
    assert table["alice"]["ch00"] == table["alice"]["total"] == str(CH00_MAX)
    assert table["bob"]["total"] == "0"
    assert 0 < int(table["ben"]["total"]) < CH00_MAX
    assert all(row["max"] == str(CH00_MAX) for row in table.values())


def test_results_json_is_gradescope_format(graded):
    out, _ = graded
    for student in ("alice", "ben", "bob"):
        data = results(out, student)
        assert set(data) >= {"score", "execution_time", "tests"}
        assert data["score"] == int(grades(out)[student]["total"])
        assert data["score"] == sum(t["score"] for t in data["tests"])
        for t in data["tests"]:
            assert set(t) >= {
                "name",
                "number",
                "score",
                "max_score",
                "status",
                "output",
                "visibility",
            }
            assert t["status"] in ("passed", "failed")
            assert t["visibility"] in ("visible", "after_published")
    assert sum(t["max_score"] for t in results(out, "alice")["tests"]) == CH00_MAX


def test_hidden_test_output_states_the_property_not_the_code(graded):
    out, _ = graded
    hidden_source = index.chapter("ch00").hidden_tests.read_text()
    hidden = [t for t in results(out, "ben")["tests"] if t["visibility"] == "after_published"]
    failed = [t for t in hidden if t["status"] == "failed"]
    assert failed
    for t in failed:
        assert t["output"].strip()
        # pytest's introspection lines ("assert ...", "+  where ... = f(...)") would show test code.
        assert not re.search(r"(^|\n)\s*(assert |\+\s+where )", t["output"]), t["output"]
        for line in hidden_source.splitlines():
            code = line.strip()
            if len(code) > 25 and not code.startswith(('"', "'", "#", 'f"')):
                assert code not in t["output"], f"hidden test code leaked: {code}"


def test_feedback_says_what_passed_what_failed_and_why(graded):
    out, _ = graded
    text = (out / "ben" / "feedback.md").read_text()
    assert "## ch00" in text and "Passed (" in text and "Failed (" in text
    assert "TODO: implement ch00.4 plot_losses" in text
    assert "Where to look:" in text and "ch00.4 plot_losses:" in text


def test_summary_has_tasks_clusters_and_a_figure(graded):
    out, _ = graded
    text = (out / "summary.md").read_text()
    assert "Where the class loses points" in text and "| ch00.1 | gradient_at |" in text
    assert "not started" in text
    png = (out / "score_distribution.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 2000


def test_progress_reports_done_total_elapsed_and_remaining(graded):
    _, progress = graded
    assert "[4/4]" in progress and "elapsed" in progress and "left" in progress


def test_the_gradebook_command_writes_the_journals_grades(graded, monkeypatch):
    """``python -m grader gradebook OUT`` hands the journal's scored results to the writer
    that ``grade --gradebook`` uses (checked through nbgrader below)."""
    out, _ = graded
    written = {}
    monkeypatch.setattr(
        gradebook,
        "write",
        lambda path, results, specs: written.update(
            path=path, totals={r.student: r.total for r in results}, specs=len(specs)
        ),
    )
    assert gradebook.main(out) == 0
    assert written["path"] == out / "gradebook.db" and written["specs"] > 0
    assert written["totals"] == {s: int(r["total"]) for s, r in grades(out).items()}


def test_nbgrader_export_gives_the_same_totals(graded, tmp_path):
    out, _ = graded
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", str(tmp_path / "nb.csv")],
        cwd=out,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    totals: dict[str, float] = {}
    with open(tmp_path / "nb.csv") as f:
        for row in csv.DictReader(f):
            assert row["assignment"] == "ch00"
            assert float(row["max_score"]) == CH00_MAX
            totals[row["student_id"]] = totals.get(row["student_id"], 0) + float(row["score"])
    assert totals == {s: float(r["total"]) for s, r in grades(out).items()}
