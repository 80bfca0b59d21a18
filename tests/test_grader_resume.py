"""Nothing lost: a grader killed with SIGKILL halfway and run again finishes with exactly
the grades of an uninterrupted run and regrades nothing that did not change; shards
merged equal one run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from grader import merge
from harness.target import REPO
from tests.grader_data.helpers import (
    CH00_MAX,
    SOLUTION,
    STUB,
    output_files,
    with_override,
    write_submission,
)

pytestmark = pytest.mark.timeout(900)
STUDENTS = {
    "s1": SOLUTION,
    "s2": STUB,
    "s3": with_override(
        "def plot_losses(losses, path):\n    raise RuntimeError('no plot today')\n"
    ),
    "s4": with_override("def gradient_at(w, x, target):\n    return 0.0\n"),
    "s5": SOLUTION,
}


def grader(*args, **kwargs):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            *map(str, args),
            "--chapters",
            "ch00",
            "--no-gradebook",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )


def finish(proc) -> str:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    root = tmp_path_factory.mktemp("subs")
    for student, module in STUDENTS.items():
        write_submission(root, student, module)
    return root


@pytest.fixture(scope="module")
def uninterrupted(subs, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole")
    finish(grader(subs, "--out", out, "--jobs", "2"))
    return out


def test_killed_run_resumes_to_the_same_grades(subs, uninterrupted, tmp_path):
    out = tmp_path / "out"
    proc = grader(subs, "--out", out, "--jobs", "1")
    journal = out / ".journal"
    deadline = time.monotonic() + 300
    while len(list(journal.glob("s*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the grader and everything it started
    proc.wait()
    done = {p.name: p.stat().st_mtime_ns for p in journal.glob("s*.json")}
    assert 2 <= len(done) < len(STUDENTS), "the run was not killed halfway"
    assert not (out / "grades.csv").exists()

    err = finish(grader(subs, "--out", out, "--jobs", "2"))
    assert f"{len(done)} submissions unchanged" in err
    assert {p.name: p.stat().st_mtime_ns for p in journal.glob("s*.json") if p.name in done} == done
    assert output_files(out) == output_files(uninterrupted)

    # Change one submission: only it is graded again.
    (subs / "s2" / "ch00" / "training_loop.py").write_text(SOLUTION)
    try:
        err = finish(grader(subs, "--out", out, "--jobs", "2"))
    finally:
        (subs / "s2" / "ch00" / "training_loop.py").write_text(STUB)
    assert f"{len(STUDENTS) - 1} submissions unchanged" in err
    assert f"s2: {CH00_MAX}/{CH00_MAX}" in err


def test_merged_shards_equal_one_run(subs, uninterrupted, tmp_path):
    parts = [tmp_path / f"part{k}" for k in (1, 2)]
    procs = [
        grader(subs, "--out", p, "--jobs", "1", "--shard", f"{k}/2") for k, p in enumerate(parts, 1)
    ]
    for p in procs:
        finish(p)
    students = [sorted(p.name for p in part.glob("s?")) for part in parts]
    assert students == [["s1", "s3", "s5"], ["s2", "s4"]]
    assert merge.main(parts, tmp_path / "merged", gradebook=False) == 0
    assert output_files(tmp_path / "merged") == output_files(uninterrupted)


def test_shards_are_deterministic_slices():
    class S:
        def __init__(self, student):
            self.student = student

    items = [S(f"x{i:02d}") for i in range(10)]
    slices = [merge.shard_of(items[::-1], k, 3) for k in (1, 2, 3)]
    names = [[s.student for s in sl] for sl in slices]
    assert sorted(sum(names, [])) == [s.student for s in items]
    assert names == [[s.student for s in merge.shard_of(items, k, 3)] for k in (1, 2, 3)]
    with pytest.raises(ValueError):
        merge.parse_shard("3/2")
