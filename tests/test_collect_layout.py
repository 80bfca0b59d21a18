"""Which folders are students is the instructor's choice (``--layout``), never a student's:
a submission folder named ``submitted`` once switched the whole run to the nbgrader
layout, so the class vanished and folders inside the attacker's submission were graded
as other students. Fast tests on ``collect.discover``, and one grading run end to end.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader import cli, collect
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import CH00_MAX, SOLUTION, STUB, grades, write_submission

CH00 = [index.chapter("ch00")]
MODULE = "ch00/training_loop.py"


def the_attack(root):
    """Two honest students, and a third whose id is ``submitted``: inside it, folders
    shaped like a classmate's submission (a stub in ann's name) and a made-up student's."""
    subs = root / "subs"
    write_submission(subs, "ann", SOLUTION)
    write_submission(subs, "bea", SOLUTION)
    write_submission(subs / "submitted", "ann", STUB)
    write_submission(subs / "submitted", "zed", SOLUTION)
    return subs


def test_a_student_named_submitted_is_one_student_and_named_in_a_warning(tmp_path):
    subs = the_attack(tmp_path)
    found, warnings = collect.discover(subs, CH00)
    by = {s.student: s for s in found}
    assert sorted(by) == ["ann", "bea", "submitted"]
    for honest in ("ann", "bea"):
        assert by[honest].source == subs / honest
        assert by[honest].files == {MODULE: SOLUTION.encode()}
    assert by["submitted"].files == {}  # no chapter folder of its own: nothing to grade
    [warning] = [w for w in warnings if "'submitted'" in w]
    assert "'ann'" in warning and "'zed'" in warning and "--layout nbgrader" in warning


def test_the_nbgrader_layout_is_asked_for(tmp_path):
    course = tmp_path / "course"
    write_submission(course / "submitted", "cid", SOLUTION, {"ch00/timestamp.txt": "2026"})
    write_submission(course / "submitted", "dee", STUB)
    (course / "source" / "ch00").mkdir(parents=True)
    found, _ = collect.discover(course, CH00, layout="nbgrader")
    assert [s.student for s in found] == ["cid", "dee"]
    assert found[0].files == {MODULE: SOLUTION.encode()}

    # Without it, the course directory is a folder of students, and the run says so.
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    found, warnings = collect.discover(course, CH00)
    assert [s.student for s in found] == ["source", "submitted"]
    assert any("nbgrader_config.py" in w and "--layout nbgrader" in w for w in warnings)
    assert any(w.startswith("'submitted' is graded as one student") for w in warnings)

    with pytest.raises(FileNotFoundError, match="submitted/"):
        collect.discover(course / "source", CH00, layout="nbgrader")
    with pytest.raises(ValueError, match="layout"):
        collect.discover(course, CH00, layout="auto")


def test_a_folder_of_other_submissions_is_still_its_students_own(tmp_path):
    """In the nbgrader layout too: a student whose folder holds several submission-shaped
    folders is graded on its own chapter folders only, and the run names it."""
    course = tmp_path / "course"
    write_submission(course / "submitted", "eve", SOLUTION)
    write_submission(course / "submitted" / "eve", "fay", STUB)
    write_submission(course / "submitted" / "eve", "gus", STUB)
    write_submission(course / "submitted", "submitted", SOLUTION)  # an id like any other
    found, warnings = collect.discover(course, CH00, layout="nbgrader")
    assert [s.student for s in found] == ["eve", "submitted"]
    assert found[0].files == {MODULE: SOLUTION.encode()}
    assert found[1].files == {MODULE: SOLUTION.encode()}
    assert len(warnings) == 1 and "'eve'" in warnings[0] and "'fay', 'gus'" in warnings[0]


def test_one_enclosing_folder_is_not_a_layout(tmp_path):
    write_submission(tmp_path / "hal", "my-work", SOLUTION)  # hal/my-work/ch00/...
    found, warnings = collect.discover(tmp_path, CH00)
    assert [s.student for s in found] == ["hal"] and found[0].files and not warnings


def test_notes_name_no_chapter_the_student_did_not_submit(tmp_path):
    """A class that submits one chapter a week is graded with every chapter: a chapter
    not there is "not submitted" in its own section, never a note per chapter."""
    write_submission(tmp_path, "ann", SOLUTION)
    [sub] = collect.find(tmp_path, list(index.chapters().values())).submissions
    assert sub.files == {MODULE: SOLUTION.encode()} and sub.notes == [] and sub.flags == []


def test_the_layout_option():
    assert cli.parser().parse_args(["grade", "subs"]).layout == "folders"
    args = cli.parser().parse_args(["grade", "course", "--layout", "nbgrader"])
    assert args.layout == "nbgrader"
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["grade", "subs", "--layout", "submitted"])


@pytest.mark.timeout(900)
def test_the_attack_end_to_end(tmp_path):
    subs, out = the_attack(tmp_path), tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(subs), "--out", str(out)]
        + ["--chapters", "ch00", "--jobs", "2", "--no-gradebook"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=850,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    table = grades(out)
    assert sorted(table) == ["ann", "bea", "submitted"]
    assert [table[s]["total"] for s in ("ann", "bea", "submitted")] == [str(CH00_MAX)] * 2 + ["0"]
    assert "warning: 'submitted' is graded as one student" in proc.stderr
