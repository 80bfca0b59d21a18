"""The command line and the collection of submissions (fast: no sandbox), and the
self-learner's ``check`` end to end."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import pytest

from grader import cli, collect
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import SOLUTION, write_submission

CH00 = [index.chapter("ch00")]


def test_grade_arguments():
    args = cli.parser().parse_args(
        ["grade", "subs", "--out", "o", "--chapters", "ch00,ch02", "--jobs", "2", "--shard", "1/3"]
    )
    assert args.chapters == ["ch00", "ch02"] and args.jobs == 2 and args.shard == "1/3"
    assert cli.parser().parse_args(["grade"]).submissions is None  # the bundled demo


def test_folders_zips_and_nbgrader_layout_are_found(tmp_path):
    write_submission(
        tmp_path / "plain", "ann", SOLUTION, {"conftest.py": "x = 1\n", "ch00/extra.py": ""}
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("bea/ch00/training_loop.py", SOLUTION)  # one enclosing folder is fine
    (tmp_path / "plain" / "bea.zip").write_bytes(buf.getvalue())
    subs, _ = collect.discover(tmp_path / "plain", CH00)
    assert [s.student for s in subs] == ["ann", "bea"]
    assert all(list(s.files) == ["ch00/training_loop.py"] for s in subs)  # nothing else taken
    course = tmp_path / "course"
    write_submission(course / "submitted", "cid", SOLUTION, {"ch00/timestamp.txt": "2026"})
    subs, _ = collect.discover(course, CH00, layout="nbgrader")
    assert [s.student for s in subs] == ["cid"] and subs[0].files


def test_unsafe_zip_entries_and_symlinks_are_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("../ch00/training_loop.py", SOLUTION)
        z.writestr("/ch00/training_loop.py", SOLUTION)
        info = zipfile.ZipInfo("ch00/training_loop.py")
        info.external_attr = 0o120777 << 16  # a symlink entry
        z.writestr(info, "/etc/passwd")
    (tmp_path / "eve.zip").write_bytes(buf.getvalue())
    link = write_submission(tmp_path, "lin", None)
    os.symlink("/etc/passwd", link / "ch00" / "training_loop.py")
    os.symlink(tmp_path / "lin", tmp_path / "sym")
    subs, warnings = collect.discover(tmp_path, CH00)
    by = {s.student: s for s in subs}
    assert set(by) == {"eve", "lin"} and any("sym" in w for w in warnings)
    assert by["eve"].files == {} and len(by["eve"].notes) >= 3
    assert by["lin"].files == {} and "symbolic link" in by["lin"].notes[0]


def test_check_scores_the_learners_own_folder():
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "check", "ch00", "--impl", "solutions"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    most = index.chapter("ch00").max_points
    assert f"total    {most} / {most}" in proc.stdout


@pytest.mark.parametrize("bad", [["grade", "--chapters", "ch99"], ["merge", "x"]])
def test_bad_arguments_fail_clearly(bad, tmp_path):
    with pytest.raises(SystemExit):
        cli.main(bad)


def test_the_grading_parent_never_imports_torch():
    """The parent only starts the processes that run tests; its own `import torch` would
    add a serial second or more to every `grader check` and `grade` (it did: 1.2 s)."""
    code = (
        "import sys\n"
        "from grader import check, grade, gradescope, merge, release\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy'))\n"
        "assert not heavy, heavy[:5]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-1500:]
