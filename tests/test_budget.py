"""A call's time limit counts the time its code would take on an idle machine: the wall
clock less what the student's processes, and the grader thread waiting on them, spent
waiting for a CPU. (The load test shows it on a saturated machine; these pin the rules.)"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from grader import verdict


@pytest.fixture
def clocks(monkeypatch):
    """A student process (asleep) and scripted clocks: ``clocks.now`` is the wall clock,
    ``clocks.waited[(pid, tid)]`` each thread's total wait for a CPU."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

    class Clocks:
        now = 100.0
        waited: dict = {}
        pid = child.pid
        me = (verdict.os.getpid(), threading.get_native_id())

    monkeypatch.setattr(verdict.time, "monotonic", lambda: Clocks.now)
    monkeypatch.setattr(verdict, "_run_delay", lambda pid, tid: Clocks.waited.get((pid, tid), 0.0))
    monkeypatch.setattr(verdict, "_descendants", lambda root: [root, *Clocks.extra])
    Clocks.extra = []
    yield Clocks
    child.kill()
    child.wait()


def test_the_grader_threads_wait_adds_to_the_students(clocks):
    budget = verdict.Budget(5.0, clocks.pid)
    clocks.now += 2.0
    clocks.waited[(clocks.pid, clocks.pid)] = 0.6  # the student's code waited to run
    clocks.waited[clocks.me] = 0.4  # then the grader waited to read the reply
    assert budget.used() == pytest.approx(1.0), (
        "2 s of wall time of which 0.6 s the student and then 0.4 s the grader waited for a "
        "CPU: 1 s of the student's own time"
    )


def test_a_short_call_on_a_busy_machine_counts_only_its_own_time(clocks):
    budget = verdict.Budget(5.0, clocks.pid)
    clocks.now += 0.1
    clocks.waited[(clocks.pid, clocks.pid)] = 0.05
    clocks.waited[clocks.me] = 0.04
    assert budget.settle() == pytest.approx(0.01), (
        "a 0.1 s call that waited 0.09 s for a CPU: hundreds of them on a loaded machine "
        "must not add up to a timeout"
    )


def test_workers_waiting_side_by_side_count_once(clocks):
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        clocks.extra = [worker.pid]
        budget = verdict.Budget(5.0, clocks.pid)
        clocks.now += 2.0
        clocks.waited[(clocks.pid, clocks.pid)] = 0.5
        clocks.waited[(worker.pid, worker.pid)] = 0.5
        assert budget.used() == pytest.approx(1.5), (
            "two processes of the student's that waited 0.5 s side by side delayed the call "
            "by 0.5 s, not 1 s"
        )
    finally:
        worker.kill()
        worker.wait()
