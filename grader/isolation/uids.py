"""Sandbox uids (modes run as root): a uid no other live sandbox holds, and nothing of
an earlier sandbox left under it.

A grader holds a uid's lock for as long as its sandbox runs, so whatever is left under
a uid whose lock is free — processes (of a grader killed with SIGKILL), files in the one
shared folder a sandbox may write (``/dev/shm``), IPC objects — is an orphan and is
cleared before the uid is used again. Processes are ended by a killer that takes the uid
itself and signals every process the uid owns at once (``kill(-1)``), which no chain of
forks can outrun: a process being forked when the signal is sent does not come to exist.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import time
from pathlib import Path

# Sandbox uids: GRADER_UID_BASE moves the range (the project's tests use their own).
UID_BASE = int(os.environ.get("GRADER_UID_BASE", "61000"))
UID_COUNT = 1000
# One folder for every grader on the machine, whatever TMPDIR each has (a cluster sets one
# per job): a lock another grader cannot see would let two of them share a uid.
LOCK_DIR = Path("/run" if os.access("/run", os.W_OK) else "/tmp") / "grader-uids"
# Where a uid may have left files: /dev/shm (the one shared folder its rules let it
# write), and the folders it could write before Landlock (a grader without it).
SHARED_WRITABLE = ("/dev/shm", "/tmp", "/var/tmp", "/dev/mqueue")


def _status_uids() -> dict[int, tuple[int, str]]:
    """pid -> (real uid, state) of every process on the machine."""
    found = {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
            )
            found[int(status.parent.name)] = (
                int(fields["Uid"].split()[0]),
                fields["State"].split()[0],
            )
        except (OSError, ValueError, KeyError, IndexError):
            continue
    return found


def uids_in_use() -> set[int]:
    return {uid for uid, _ in _status_uids().values()}


def live_processes_of(uid: int) -> list[int]:
    """Processes of ``uid`` that still run (zombies aside: they hold nothing)."""
    return [pid for pid, (owner, state) in _status_uids().items() if owner == uid and state != "Z"]


class UidSlot:
    """An unprivileged uid held exclusively through a lock file (across graders), with
    nothing of an earlier sandbox left under it (see the module doc)."""

    def __init__(self) -> None:
        LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        busy = uids_in_use()
        for uid in sorted(range(UID_BASE, UID_BASE + UID_COUNT), key=lambda u: u in busy):
            fd = os.open(LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            clear_uid(uid)  # what a grader killed mid-way may have left (files, IPC, strays)
            if uid in busy and live_processes_of(uid):
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError("no free sandbox uid")

    def release(self) -> None:
        os.close(self._fd)


KILL_ROUNDS = 50  # a uid's processes are gone after the first; the rest only confirm


def end_processes_of(uid: int) -> bool:
    """SIGKILL every process of ``uid``, from a child that takes the uid: ``kill(-1)``
    reaches every process the uid owns in one pass that a fork cannot slip through.
    Repeated until none is left running. True when none is."""
    if uid < UID_BASE or uid >= UID_BASE + UID_COUNT:
        raise ValueError(f"uid {uid} is not a sandbox uid")  # kill(-1) as root ends everything
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            for _ in range(KILL_ROUNDS):
                try:
                    os.kill(-1, signal.SIGKILL)  # every process of this uid but this one
                except ProcessLookupError:
                    pass
                if live_processes_of(uid) == [os.getpid()]:
                    os._exit(0)
                time.sleep(0.002)
            os._exit(1)
        except BaseException:  # noqa: BLE001 - a child of the grader: never returns
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _remove_files_of(uid: int) -> None:
    """What ``uid`` left in the folders every user may write: it can only have created
    entries of its own at their top."""
    for folder in SHARED_WRITABLE:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _remove_ipc_of(uid: int) -> None:
    """System V objects owned by ``uid`` (the seccomp filter refuses making them; this
    clears what a grader without it let a sandbox make)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for kind, call in (("shm", "shmctl"), ("msg", "msgctl"), ("sem", "semctl")):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        header = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(header, line.split(), strict=False))
            try:
                if int(row.get("uid", -1)) == uid:
                    ident = int(row.get("shmid") or row.get("msqid") or row.get("semid"))
                    if call == "semctl":
                        libc.semctl(ident, 0, 0)  # IPC_RMID
                    else:
                        getattr(libc, call)(ident, 0, None)
            except (TypeError, ValueError):
                continue


def clear_uid(uid: int) -> None:
    """End everything a sandbox uid may have left: its processes, its files in shared
    writable folders, its System V IPC objects."""
    end_processes_of(uid)
    _remove_files_of(uid)
    _remove_ipc_of(uid)
