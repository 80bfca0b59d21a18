"""Ending a sandbox uid's processes cannot be outrun (``grader.isolation.uids``): chains
of processes that each fork a child and exit at once — the way out of a kill that scans
``/proc`` for pids and signals what it found — are all gone after one call."""

from __future__ import annotations

import os
import time

import pytest

from grader.isolation import uids

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids need root")
CHAINS = 6


def start_fork_chains(uid: int) -> int:
    """A process of ``uid`` that starts ``CHAINS`` chains: in each, every process forks
    its successor and exits, as fast as it can, forever."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.setsid()  # out of the test's process group, as an escaping student would be
            for _ in range(CHAINS):
                if os.fork() == 0:
                    while True:
                        try:
                            if os.fork() != 0:
                                os._exit(0)
                        except OSError:
                            time.sleep(0.001)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    return pid


def test_a_fork_chain_cannot_outrun_the_end_of_its_uid():
    slot = uids.UidSlot()
    try:
        start_fork_chains(slot.uid)
        deadline = time.monotonic() + 10
        while len(uids.live_processes_of(slot.uid)) < CHAINS and time.monotonic() < deadline:
            time.sleep(0.01)
        assert uids.live_processes_of(slot.uid), "the chains never started"
        time.sleep(0.3)  # let them run: the pids they hold change every few milliseconds
        assert uids.end_processes_of(slot.uid), "the killer gave up with processes left"
        time.sleep(0.2)  # a chain that escaped would have forked again by now
        left = uids.live_processes_of(slot.uid)
        assert not left, f"{len(left)} processes of uid {slot.uid} survived: {left[:10]}"
    finally:
        uids.clear_uid(slot.uid)
        slot.release()


def test_the_killer_refuses_a_uid_outside_the_sandbox_range():
    """``kill(-1)`` as root ends every process on the machine: never for uid 0 or any uid
    the grader does not own."""
    for uid in (0, uids.UID_BASE - 1, uids.UID_BASE + uids.UID_COUNT):
        with pytest.raises(ValueError):
            uids.end_processes_of(uid)
