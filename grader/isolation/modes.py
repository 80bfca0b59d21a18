"""Which way this machine confines a student process, best first.

| mode        | who grades                         | what confines the student process |
| ----------- | ---------------------------------- | --------------------------------- |
| `namespace` | root, namespaces allowed           | its own namespaces and root, a uid of its own, Landlock, seccomp |
| `userns`    | a normal user, user namespaces allowed | its own user, mount, PID, network, IPC namespaces and root, Landlock, seccomp |
| `uid`       | root, namespaces refused (a container) | a uid of its own, Landlock rules, seccomp |
| `landlock`  | a normal user, no user namespaces  | Landlock rules and seccomp, as the grader's own user |
| `none`      | neither namespaces nor Landlock    | limits only |

``grade`` runs a class only in a mode that ``confines`` (the first three; ``uid`` only
with Landlock), unless the instructor passes ``--no-confinement``; ``check`` (a learner
on their own code) runs in any mode and says so once. ``GRADER_ISOLATION`` forces a
weaker mode (to test it) and ``GRADER_LANDLOCK=0`` switches Landlock off.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading

MODES = ("namespace", "userns", "uid", "landlock", "none")
# The project's tests make the grader's own machinery fail on purpose with this variable
# ("sandbox-setup"), to prove such failures are never charged to a student.
FAULT_ENV = "GRADER_TEST_FAULT"
# What the trusted process and its spawner keep of the grader's environment: the
# sandbox uids' range (grader.isolation.uids), the mode and Landlock forced weaker.
SETTINGS_ENV = ("GRADER_UID_BASE", "GRADER_ISOLATION", "GRADER_LANDLOCK", FAULT_ENV)


def _probe() -> None:
    """Enter the namespaces a sandbox gets, mount a tmpfs, and mount /proc as PID 1 of
    the new PID namespace, exactly as a sandbox's setup does; exit 0 when all worked.
    Runs in a single-threaded child (a process with threads may not enter a user
    namespace)."""
    from grader.isolation import namespaces

    namespaces.enter(unprivileged=os.geteuid() != 0)
    namespaces.mount_private_tmpfs("/tmp", 1)
    os.mkdir("/tmp/proc")
    pid = os.fork()
    if pid == 0:
        namespaces.mount_proc("/tmp/proc")
        os._exit(0)
    os._exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


def _namespaces_work() -> bool:
    """Whether ``_probe`` succeeds: in a forked child while this process has one thread
    (a few milliseconds), else in a fresh interpreter (a fork beside threads could meet
    a lock another thread held)."""
    if threading.active_count() == 1:
        pid = os.fork()
        if pid == 0:
            try:
                _probe()
            finally:
                os._exit(1)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    from harness.target import REPO

    code = "from grader.isolation import modes; modes._probe()"
    try:
        done = subprocess.run(
            [sys.executable, "-S", "-c", code],
            cwd=REPO,
            env={"PYTHONPATH": str(REPO), "PATH": os.environ.get("PATH", "")},
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def landlock_abi() -> int:
    """The Landlock ABI this kernel offers the grader (0: none, or switched off)."""
    if not sys.platform.startswith("linux") or os.environ.get("GRADER_LANDLOCK") == "0":
        return 0
    try:
        import landlockpy

        return landlockpy.abi_version()
    except (ImportError, OSError):
        return 0


@functools.cache
def mode() -> str:
    """This machine's mode (see the module doc)."""
    if not sys.platform.startswith("linux"):
        return "none"
    root = os.geteuid() == 0
    # "none" is never chosen for root, only forced (to test the platforms that have it)
    ladder = ["namespace", "uid", "none"] if root else ["userns", "landlock", "none"]
    forced = os.environ.get("GRADER_ISOLATION")
    if forced in ladder:
        ladder = ladder[ladder.index(forced) :]
    for candidate in ladder:
        if candidate in ("namespace", "userns") and not _namespaces_work():
            continue
        if candidate == "landlock" and not landlock_abi():
            continue
        return candidate
    return "none"


def confines(mode: str, abi: int | None = None) -> bool:
    """Whether ``mode`` keeps a student's code from the grader's files and from other
    students (what grading a class needs)."""
    abi = landlock_abi() if abi is None else abi
    return mode in ("namespace", "userns") or mode == "uid" and abi > 0


def gaps(mode: str, abi: int | None = None) -> list[str]:
    """What ``mode`` does not defend here, for the instructor (empty: nothing listed in
    grader/README.md's isolation table beyond what every mode leaves open)."""
    abi = landlock_abi() if abi is None else abi
    found = []
    if mode in ("landlock", "none"):
        found.append(
            "student code runs as your own user: it can signal, and reach the session "
            "services of, anything you run"
        )
    if mode in ("uid", "landlock", "none") and abi == 0:
        found.append(
            "no Landlock here: student code can read every file your user (or, in the `uid` "
            "mode, any user) may read, and write where they may"
        )
    elif mode in ("uid", "landlock") and abi < 6:
        found.append(
            f"Landlock ABI {abi} (< 6): signals and abstract Unix sockets are not scoped to "
            "the sandbox"
        )
    if mode in ("uid", "landlock") and abi < 9:
        found.append(
            f"no namespaces, Landlock ABI {abi} (< 9): student code can connect to Unix "
            "sockets by path (those any user may use, in the `uid` mode)"
        )
    return found


DESCRIPTION = {
    "namespace": "own namespaces and root, a uid of its own, Landlock and seccomp",
    "userns": "own user namespace, root and namespaces (as your user), Landlock and seccomp",
    "uid": "a uid of its own and seccomp, Landlock rules where the kernel has them; no "
    "namespaces (refused here)",
    "landlock": "Landlock rules and seccomp as your own user (no user namespaces here)",
    "none": "limits only: no namespaces and no Landlock here",
}
