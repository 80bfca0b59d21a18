"""Any folder or zip name is a student: Moodle's "download all submissions" names folders
by full name (``Zoë Åström``, ``obrien,jr``), and a class once lost five such students
to "not a usable student id" while the run wrote ``grades.csv (0 students)`` and exited
0. Each name gets a safe internal id (stable, distinct, usable as a file name) and is
shown as it was in every output; an entry that cannot be graded as a student is named
with why, and the run then exits non-zero; so does a folder with nobody to grade."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import subprocess
import sys
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader import collect, escape, grade, merge
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import CH00_MAX, SOLUTION, STUB, write_submission

CH00 = [index.chapter("ch00")]
MODULE = "ch00/training_loop.py"
NAMES = [
    "Zoë Åström",
    "obrien,jr",
    'say"hi',
    "=SUM(1+1)",
    "+1-2",
    "Ana María López",
    "j.doe",
    "李雷",
    "x" * 180,
    "-dash",
    "_under",
]
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+~-]*")


def _zip(path, module: str) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(MODULE, module)
    path.write_bytes(buf.getvalue())


def test_any_folder_or_zip_name_is_a_student(tmp_path):
    for name in NAMES:
        write_submission(tmp_path, name, SOLUTION)
    _zip(tmp_path / "Ünïcode zip.zip", SOLUTION)
    found = collect.find(tmp_path, CH00)
    assert not found.left_out and not found.warnings
    by_name = {s.name: s for s in found.submissions}
    assert set(by_name) == {*NAMES, "Ünïcode zip"}
    for name, sub in by_name.items():
        assert sub.files == {MODULE: SOLUTION.encode()}, name
        assert SAFE_ID.fullmatch(sub.student) and len(sub.student) <= 100, sub.student
        assert sub.student == collect.student_id(name)  # stable
    assert by_name["j.doe"].student == "j.doe"  # a plain id is kept as it is
    assert len({s.student for s in found.submissions}) == len(found.submissions)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=120), min_size=2, max_size=8, unique=True))
def test_student_ids_are_safe_stable_and_distinct(names):
    names = [n for n in names if "/" not in n and "\0" not in n and n not in (".", "..")]
    ids = [collect.student_id(n) for n in names]
    assert len(set(ids)) == len(ids), list(zip(names, ids))
    for name, sid in zip(names, ids):
        assert SAFE_ID.fullmatch(sid) and len(sid) <= 100, (name, sid)
        assert sid == collect.student_id(name)
        assert sid == name or "~" in sid  # a derived id never equals a plain one


def test_what_cannot_be_a_student_is_left_out_with_why(tmp_path):
    write_submission(tmp_path, "bob", SOLUTION)
    _zip(tmp_path / "bob.zip", STUB)  # a second submission of bob
    (tmp_path / "grades.xlsx").write_text("not a submission")
    os.symlink(tmp_path / "bob", tmp_path / "alias")
    (tmp_path / "__MACOSX").mkdir()  # the system's, never a student
    (tmp_path / ".DS_Store").write_text("")
    found = collect.find(tmp_path, CH00)
    assert [s.name for s in found.submissions] == ["bob"]
    assert found.submissions[0].files == {MODULE: SOLUTION.encode()}  # the folder's
    why = dict(found.left_out)
    assert set(why) == {"bob.zip", "grades.xlsx", "alias"}
    assert "second submission" in why["bob.zip"] and "bob" in why["bob.zip"]
    assert "neither a folder nor a .zip" in why["grades.xlsx"]
    assert "symbolic link" in why["alias"]
    # the old two-value answer still names them
    _, warnings = collect.discover(tmp_path, CH00)
    assert sum("not graded" in w for w in warnings) == 3


def test_shards_partition_the_class_stably(tmp_path):
    for name in NAMES:
        write_submission(tmp_path, name, STUB)
    subs = collect.find(tmp_path, CH00).submissions
    parts = [merge.shard_of(subs, k, 3) for k in (1, 2, 3)]
    ids = [s.student for part in parts for s in part]
    assert sorted(ids) == sorted(s.student for s in subs) and len(set(ids)) == len(ids)
    shuffled = random.Random(0).sample(subs, len(subs))
    assert [merge.shard_of(shuffled, k, 3) for k in (1, 2, 3)] == parts


def _grade(subs, out, *extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "grader", "grade", str(subs), "--out", str(out)]
        + ["--chapters", "ch00", "--jobs", "2", *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=850,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def test_a_folder_with_nobody_to_grade_fails_before_any_work(tmp_path):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "README.txt").write_text("submissions go here")
    proc = _grade(tmp_path / "subs", tmp_path / "out")
    assert proc.returncode == grade.LEFT_OUT, proc.stderr
    assert "nobody to grade" in proc.stderr and "README.txt" in proc.stderr
    assert "preflight" not in proc.stderr  # no time spent proving the grader
    assert not (tmp_path / "out" / ".journal").exists()


@pytest.mark.timeout(900)
def test_a_class_with_such_names_is_graded_in_full_and_shown_as_it_was(tmp_path):
    subs = tmp_path / "subs"
    honest = NAMES[:5]  # the five names a class once lost
    for k, name in enumerate(honest):
        write_submission(subs, name, SOLUTION if k < 2 else STUB)
    (subs / "notes.txt").write_text("a stray file")
    out = tmp_path / "out"
    proc = _grade(subs, out)
    assert proc.returncode == grade.LEFT_OUT, proc.stderr[-3000:]
    assert "'notes.txt' is not graded: neither a folder nor a .zip" in proc.stderr
    with open(out / "grades.csv", newline="") as f:
        rows = {r["student"].removeprefix("'"): r for r in csv.DictReader(f)}
    assert set(rows) == set(honest)
    with open(out / "_instructor" / "students.csv", newline="") as f:
        folders = {r["student"].removeprefix("'"): r["folder"] for r in csv.DictReader(f)}
    for k, name in enumerate(honest):
        expected = CH00_MAX if k < 2 else 0
        assert rows[name]["total"] == str(expected), name
        data = json.loads((out / folders[name] / "results.json").read_text())
        assert data["score"] == expected
        feedback = (out / folders[name] / "feedback.md").read_text()
        assert feedback.startswith(f"# Feedback for {escape.md_text(name)}\n")
    assert "wrote 5 students' grades" in proc.stderr and "summary.md" in proc.stderr
