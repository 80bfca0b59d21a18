"""The grader's outputs on classes built in memory: one visibility policy, CUDA tests
that count the same on every machine, gradebook cells from the course's own test list,
and an instructor summary that stays short at 500 students."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from grader import figures, gradebook, outputs, report, score

pytestmark = pytest.mark.timeout(600)


def specs() -> list[score.TestSpec]:
    found = []
    for k in range(6):
        found.append(
            score.TestSpec(
                f"exercises/ch00/test_t.py::test_p{k}",
                "ch00",
                f"test_p{k}",
                f"ch00.{k % 3 + 1}",
                2,
                False,
                False,
            )
        )
        found.append(
            score.TestSpec(
                f"grader/hidden/ch00/test_t_hidden.py::test_h{k}",
                "ch00",
                f"test_h{k}",
                f"ch00.{k % 3 + 1}",
                1,
                False,
                True,
                f"property {k} holds.",
            )
        )
    found.append(
        score.TestSpec(
            "exercises/ch00/test_t.py::test_gpu", "ch00", "test_gpu", "ch00.1", 3, True, False
        )
    )
    return found


def student(name: str, rng: random.Random, gpu: bool) -> score.StudentResult:
    records = {}
    for s in specs():
        if s.cuda:
            records[s.nodeid] = (
                {"outcome": "passed"}
                if gpu
                else {"outcome": "skipped", "message": "x: not graded here: needs CUDA"}
            )
        elif rng.random() < 0.5:
            records[s.nodeid] = {"outcome": "passed"}
        else:
            records[s.nodeid] = {
                "outcome": "failed",
                "category": "assert",
                "message": f"{'secret' if s.hidden else 'public'} detail {rng.randint(0, 3)}: "
                f"expected 4, got {rng.randint(0, 9)}",
            }
    return score.score_student(name, specs(), {"records": records})


def test_cuda_tests_count_the_same_whatever_machine_grades():
    rng = random.Random(0)
    on_gpu, on_cpu = student("a", rng, gpu=True), student("b", rng, gpu=False)
    assert on_gpu.max_total == on_cpu.max_total == sum(s.points for s in specs() if not s.cuda)
    gpu_entry = next(
        t for t in report.results_json(on_gpu)["tests"] if t["name"].endswith("test_gpu")
    )
    assert gpu_entry["status"] in ("passed", "failed") and gpu_entry["max_score"] == 0
    # Where no GPU ran it, Gradescope would paint the test red whatever its status says:
    # it stays out of the test list and the submission's output counts it.
    cpu_data = report.results_json(on_cpu)
    assert not any(t["name"].endswith("test_gpu") for t in cpu_data["tests"])
    assert "CUDA test(s) were not run here" in cpu_data["output"]


def test_a_hidden_test_shows_the_same_in_feedback_and_results_and_its_detail_only_to_the_instructor(
    tmp_path,
):
    r = student("ann", random.Random(1), gpu=False)
    outputs.write_reports(tmp_path, [r], ["ch00"])
    data = json.loads((tmp_path / "ann" / "results.json").read_text())
    feedback = (tmp_path / "ann" / "feedback.md").read_text()
    hidden = [
        t for t in data["tests"] if t["visibility"] == "after_published" and t["status"] == "failed"
    ]
    assert hidden
    for t in hidden:
        assert t["output"] in feedback and "secret detail" not in t["output"]
    assert "secret detail" not in feedback
    assert "secret detail" in (tmp_path / "_instructor" / "hidden_failures.md").read_text()


def test_a_student_named_like_an_output_file_does_not_stop_the_run(tmp_path):
    results = [
        student(name, random.Random(2), gpu=False) for name in ("grades.csv", "summary.md", "zoe")
    ]
    outputs.write_reports(tmp_path, results, ["ch00"])
    with open(tmp_path / "grades.csv") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert set(rows) == {"grades.csv", "summary.md", "zoe"}
    assert (tmp_path / "_student-grades.csv" / "results.json").is_file()
    assert (tmp_path / "summary.md").is_file() and (tmp_path / "zoe" / "feedback.md").is_file()


def test_the_summary_stays_short_at_500_students(tmp_path):
    rng = random.Random(3)
    results = [student(f"s{k:03d}", rng, gpu=False) for k in range(500)]
    text = report.summary_md(results, ["ch00"])
    assert len(text.splitlines()) < 80, f"{len(text.splitlines())} lines"
    assert "Failures shared by several students" in text and "and" in text
    figures.score_figure(results, ["ch00"], tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"


def test_gradebook_cells_come_from_the_course_not_the_first_student(tmp_path):
    # "aaa" sorts first and has the CUDA test not graded; "bbb" graded it on a GPU.
    results = [
        student("aaa", random.Random(4), gpu=False),
        student("bbb", random.Random(5), gpu=True),
    ]
    outputs.write_reports(tmp_path, results, ["ch00"])
    gradebook.write(tmp_path / "gradebook.db", results, specs())
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    subprocess.run(
        [sys.executable, "-m", "nbgrader", "export", "--to", str(tmp_path / "nb.csv")],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    with open(tmp_path / "nb.csv") as f:
        exported = {row["student_id"]: row for row in csv.DictReader(f)}
    with open(tmp_path / "grades.csv") as f:
        table = {row["student"]: row for row in csv.DictReader(f)}
    for name in ("aaa", "bbb"):
        assert float(exported[name]["score"]) == float(table[name]["total"])
        assert float(exported[name]["max_score"]) == float(table[name]["max"])


def test_tampering_attempts_and_refused_files_are_one_line_each_in_the_summary():
    mallory = student("mallory", random.Random(6), gpu=False)
    mallory.flags = [
        "'conftest.py': a conftest.py (pytest would load it; the grader never does)",
        "zip entry '../x.py' refused: path leaves the submission (..)",
    ]
    mallory.tests[0].status, mallory.tests[0].category = "failed", "tampering"
    honest = student("honest", random.Random(7), gpu=False)
    text = report.summary_md([honest, mallory], ["ch00"])
    section = text.split("## Tampering attempts and refused files", 1)[1].split("\n## ", 1)[0]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(items) == 3 and all(line.startswith("- mallory: ") for line in items), items
    assert "conftest.py" in items[0] and "refused" in items[1] and "tampering" in items[2]
    assert "honest" not in section
    assert "## Tampering" not in report.summary_md([honest], ["ch00"])


def test_notes_in_the_summary_are_cut_between_words():
    r = student("ann", random.Random(8), gpu=False)
    r.notes = ["the test process had to be restarted " + "again and again " * 30]
    [line] = [x for x in report.summary_md([r], ["ch00"]).splitlines() if x.startswith("- ann:")]
    assert line.endswith("…") and len(line) < 260
    assert line.removesuffix("…").split()[-1] in ("again", "and"), line
