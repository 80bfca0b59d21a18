"""Nothing lost: a grader killed with SIGKILL halfway and run again finishes with exactly
the grades of an uninterrupted run and regrades nothing that did not change; shards
merged equal one run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import merge
from grader.isolation import spawner, uids
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
    os.kill(proc.pid, signal.SIGKILL)  # the grader alone: what it started must die with it
    proc.wait()
    assert_no_sandbox_process_survives()
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


def sandbox_processes() -> list[int]:
    base = int(os.environ["GRADER_UID_BASE"])
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            line = next(ln for ln in status.read_text().splitlines() if ln.startswith("Uid:"))
        except (OSError, StopIteration):
            continue
        if base <= int(line.split()[1]) < base + uids.UID_COUNT:
            found.append(int(status.parent.name))
    return found


def assert_no_sandbox_process_survives(within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sandbox_processes(), (
        f"sandbox processes outlived their grader: {sandbox_processes()}"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids need root")
def test_a_grader_killed_with_sigkill_leaves_nothing_running(tmp_path):
    """A student process stuck in an endless import dies with its grader."""
    write_submission(tmp_path / "subs", "looper", with_override("while True:\n    pass\n"))
    proc = grader(
        tmp_path / "subs", "--out", tmp_path / "out", "--jobs", "1", "--test-timeout", "600"
    )
    deadline = time.monotonic() + 300
    while not sandbox_processes() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert sandbox_processes(), "the student process never started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert_no_sandbox_process_survives()


def test_a_process_whose_parent_ended_before_it_tied_itself_ends_at_once():
    """The parent-death signal is set after fork and again after the change of uid (which
    clears it); a parent that ended in between sends no signal, so the process checks
    and ends instead of running on as an orphan of a killed grader."""
    expected = os.getpid()
    for parent, code in ((expected, 0), (expected + 1_000_000, 1)):  # alive / already gone
        pid = os.fork()
        if pid == 0:
            try:
                spawner.die_with_parent(parent)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == code, (parent, status)


def test_pid_1_of_a_namespace_sees_through_its_lifeline_that_its_parent_ended():
    """PID 1 of a new PID namespace reads its parent's pid as 0, so the check above cannot
    tell; it holds the read end of a pipe whose write end only its parent keeps open, and
    a closed pipe means the parent is gone."""
    for parent_alive, code in ((True, 0), (False, 1)):
        lifeline, held = os.pipe()
        if not parent_alive:
            os.close(held)  # as if the parent ended between the fork and the signal
        pid = os.fork()
        if pid == 0:
            try:
                if parent_alive:
                    os.close(held)  # the child never holds the write end
                spawner.die_with_parent(lifeline=lifeline)
            finally:
                os._exit(0)
        os.close(lifeline)
        _, status = os.waitpid(pid, 0)
        if parent_alive:
            os.close(held)
        assert os.waitstatus_to_exitcode(status) == code, (parent_alive, status)


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
    assert not (tmp_path / "merged" / "_instructor" / "regrade.md").exists()

    # One shard regraded (here: one passed test of s4 now fails), merged again into the
    # same folder: the report names s4 alone and the test that moved.
    regraded = tmp_path / "part2-again"
    shutil.copytree(parts[1], regraded)
    entry_path = regraded / ".journal" / "s4.json"
    entry = json.loads(entry_path.read_text())
    nodeid = next(n for n, r in sorted(entry["records"].items()) if r["outcome"] == "passed")
    entry["records"][nodeid] = {"outcome": "failed", "message": "a regraded failure"}
    entry_path.write_text(json.dumps(entry))
    assert merge.main([parts[0], regraded], tmp_path / "merged", gradebook=False) == 0
    report = (tmp_path / "merged" / "_instructor" / "regrade.md").read_text()
    moved = (tmp_path / "merged" / "_instructor" / "regrade.csv").read_text()
    assert "s4" in moved and not any(f"s{k}" in moved for k in (1, 2, 3, 5)), moved
    assert nodeid.split("::")[1] in report, report


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
