"""A call's time limit counts the time its code would take on an idle machine: the wall
clock less what the student's processes, and the grader thread waiting on them, spent
waiting for a CPU. (The load test shows it on a saturated machine; these pin the rules.)"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading

import pytest

from grader import verdict
from harness import wire


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


def test_a_reply_that_cannot_be_checked_in_the_calls_time_left_is_a_timeout(monkeypatch):
    """Decoding a reply is part of its call: plain data that is merely costly to check
    (a million nested lists) may take what is left of the call's time, and no more."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    reply = wire.encode({"ok": True, "value": [[[[]]] for _ in range(240_000)]})

    def student():  # reads the request, then sends the costly reply at once
        os.read(to_r, 1 << 16)
        with os.fdopen(from_w, "wb") as out:
            out.write(struct.pack(">Q", len(reply)) + reply)

    writer = threading.Thread(target=student, daemon=True)
    writer.start()
    monkeypatch.setattr(verdict, "DECODE_FLOOR_S", 0.0, raising=False)
    budget = verdict.Budget(5.0, child.pid)
    monkeypatch.setattr(budget, "used", lambda quick=False: 4.999)  # the call's end is near
    process = verdict.StudentProcess(child.pid, to_w, from_r, client=None, student=child.pid)
    try:
        with pytest.raises(verdict.Gone) as gone:
            process.ask({"op": "call"}, budget)
        assert gone.value.timed_out and not gone.value.tampered, (
            "a reply that arrived with 1 ms of its call left, and takes longer to decode, must "
            "end the call as a timeout (not be decoded after the call's end, nor called tampering)"
        )
        assert child.wait(timeout=10) is not None, "the student process was not stopped"
    finally:
        writer.join(timeout=10)
        child.kill()
        child.wait()
        os.close(to_r)
