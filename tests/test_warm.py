"""The warm parent of the grader's trusted test processes (``grader.warm``): a run it
forks grades exactly as a freshly started one, holds nothing of the parent's or of other
runs', reports how it ended, and the parent ends with its grader."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grader import run, sandbox, score, warm
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import with_override

pytestmark = pytest.mark.timeout(600)
ENV = sandbox.trusted_env(1)


def test_a_warm_run_grades_as_a_freshly_started_one(monkeypatch):
    chapters = [index.chapter("ch00")]
    specs = score.collect_expected(chapters)
    broken = with_override("def plot_losses(losses, path):\n    raise RuntimeError('no plot')\n")
    files = {"ch00/training_loop.py": broken.encode()}
    limits = sandbox.Limits(test_timeout=30, wall=300)
    started, real = [], warm.start

    def counted(*args):
        proc = real(*args)
        started.append(proc)
        return proc

    def outcomes() -> dict[str, str]:
        with sandbox.parent_dir() as tmp:
            records, _ = run.grade_submission(files, chapters, specs, limits, tmp)
        return {nodeid: r.outcome for nodeid, r in records.items()}

    monkeypatch.setattr(warm, "start", counted)
    warm_run = outcomes()
    assert started and all(isinstance(p, warm.Started) for p in started), (
        "the run was not forked by the warm parent"
    )
    started.clear()
    monkeypatch.setattr(warm, "_fork", lambda *args: None)  # as where it cannot start
    fresh_run = outcomes()
    assert started and not any(isinstance(p, warm.Started) for p in started)
    assert warm_run == fresh_run
    assert {"passed", "failed"} <= set(warm_run.values())


def _fd_targets(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
    return found


def _wait_until(done, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.05)
    return False


def _writer_once_read(fifo: Path, seconds: float = 60) -> int:
    """Open ``fifo`` for writing as soon as a reader has it open (the run reached it)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_a_run_holds_nothing_of_the_parent_or_of_other_runs_and_says_how_it_ended(tmp_path):
    """Two runs held in their first step (reading a config that is a FIFO): the second
    holds no socket and no status pipe, neither its own nor the first run's. Each ends
    with a status and a traceback in its own log when its config is not one."""
    runs, logs, pipes, writers = [], [], [], []
    for k in (1, 2):
        fifo = tmp_path / f"config{k}.json"
        os.mkfifo(fifo)
        results_r, results_w = os.pipe()
        log = tempfile.TemporaryFile()
        started = warm.start([str(fifo)], results_w, log.fileno(), ENV)
        os.close(results_w)
        assert isinstance(started, warm.Started), "the warm parent did not start"
        runs.append(started)
        logs.append(log)
        pipes.append(results_r)
        writers.append(_writer_once_read(fifo))
    try:
        second = runs[1].pid
        assert _wait_until(lambda: str(tmp_path / "config2.json") in _fd_targets(second))
        held = _fd_targets(second)
        status_pipes = {f"pipe:[{os.fstat(r.status_fd).st_ino}]" for r in runs}
        assert not held & status_pipes, f"a run holds a status pipe: {sorted(held)}"
        assert not [t for t in held if t.startswith("socket:")], sorted(held)
    finally:
        for fd in writers:
            os.close(fd)  # an empty config: the run fails to read it and ends
    for started, log, results_r in zip(runs, logs, pipes):
        assert started.wait(timeout=60) == 1
        log.seek(0)
        assert "JSONDecodeError" in log.read().decode(), "the run's error is not in its log"
        log.close()
        os.close(results_r)


PARENT_OF_A_WARM_PARENT = """
import sys, time
from grader import sandbox, warm
parent = warm._Parent(sandbox.trusted_env(1))
print(parent.proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_the_warm_parent_ends_when_its_grader_is_killed():
    grader = subprocess.Popen(
        [sys.executable, "-c", PARENT_OF_A_WARM_PARENT],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        pid = int(grader.stdout.readline())
        assert _alive(pid)
    finally:
        grader.send_signal(signal.SIGKILL)
        grader.wait()
    assert _wait_until(lambda: not _alive(pid), 30), f"the warm parent {pid} outlived its grader"


def test_the_tests_collected_warm_are_those_collected_fresh(monkeypatch):
    chapters = [index.chapter("ch00"), index.chapter("ch05")]
    warm_specs = score.collect_expected(chapters)
    monkeypatch.setattr(warm, "_fork", lambda *args: None)  # as where it cannot start
    assert warm_specs == score.collect_expected(chapters) and warm_specs


def test_a_run_is_held_to_the_cores_its_caller_is_held_to(tmp_path):
    """As a process the caller started would be (tests/test_grader_load.py's busy core)."""
    mine = os.sched_getaffinity(0)
    one = {min(mine)}
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    results_r, results_w = os.pipe()
    warm.start(["/nonexistent"], results_w, results_w, ENV).wait(60)  # the parent is warm
    os.sched_setaffinity(0, one)
    try:
        started = warm.start([str(fifo)], results_w, results_w, ENV)
    finally:
        os.sched_setaffinity(0, mine)
        os.close(results_w)
    assert isinstance(started, warm.Started), "the warm parent did not start"
    writer = _writer_once_read(fifo)
    try:
        assert os.sched_getaffinity(started.pid) == one
    finally:
        os.close(writer)
        started.wait(timeout=60)
        os.close(results_r)
