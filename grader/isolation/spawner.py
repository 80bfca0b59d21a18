"""Start the processes the student's code runs in, and nothing else.

``run_spawner`` is a small server forked from the trusted test process before it loads
any test (so it holds no test, no reference answer, no solution). On request it starts
one student process for one chapter and phase, with the pipes it is handed, confined as
``declaration.declare`` says for this machine's ``modes.mode()``, and reports when it
ends. Setup, in order: namespaces and a root of its own (``namespace``, ``userns``), or a
private scratch folder (the other modes); limits; its user (a sandbox uid as root, the
grader's own otherwise, without capabilities); Landlock rules; the seccomp filter; then
the student's code, and nothing the grader trusts comes from the process after that.

Every student process gets ``PR_SET_PDEATHSIG``: it dies when the process that started
it dies, so a grader killed with SIGKILL leaves nothing running. How its other
processes end: with PID 1 of its PID namespace (namespace modes), by its uid
(``uids.end_processes_of``, the ``uid`` mode), or as this spawner's descendants (it is
their subreaper; the modes without either).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import socket
import sys
import tempfile
import time
import types
from pathlib import Path

from grader.isolation import declaration, landlock, seccomp, shm
from grader.isolation.modes import FAULT_ENV
from grader.isolation.uids import UidSlot, clear_uid

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38

_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent: int | None = None, lifeline: int | None = None) -> None:
    """SIGKILL this process when the thread that started it ends, and end at once if that
    has already happened (no signal would come, and the process would outlive its
    grader): known when ``parent`` (the pid that forked it) is no longer the parent, or
    when ``lifeline`` (the read end of a pipe whose write end only the parent holds)
    reads as closed, which PID 1 of a namespace (its parent's pid unseen) can tell."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(1)
    if lifeline is not None and select.select([lifeline], [], [], 0)[0]:
        os._exit(1)  # readable: every write end is closed (the parent never writes)


# ---- one student process -----------------------------------------------------------


def _limit(limits: declaration.ProcessLimits, nproc: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for res, value in (
        (resource.RLIMIT_AS, limits.memory_mb << 20),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits.fsize_mb << 20),
        (resource.RLIMIT_NOFILE, limits.nofile),
    ):
        resource.setrlimit(res, (value, value))


def _become(uid: int, parent: int | None = None, lifeline: int | None = None) -> None:
    """Run as ``uid`` from now on, with no capability and no way to gain one."""
    if os.geteuid() == 0 and uid != 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root: every capability goes with it
    else:
        from grader.isolation import namespaces

        namespaces.drop_capabilities()  # a user namespace gave this user all of them
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    die_with_parent(parent, lifeline)  # a change of credentials clears it


def _keep_fds(keep: dict[int, int]) -> None:
    """Make ``keep`` (target fd -> current fd) the only open descriptors, and fd 0 read
    from /dev/null."""
    moved = {}
    for dst, src in keep.items():
        moved[dst] = os.dup(src)
    for fd in range(0, 1024):
        if fd not in moved.values():
            try:
                os.close(fd)
            except OSError:
                pass
    for dst, src in moved.items():
        os.dup2(src, dst)
        os.close(src)
    if 0 not in keep:
        null = os.open(os.devnull, os.O_RDONLY)
        if null != 0:
            os.dup2(null, 0)
            os.close(null)


def _student_env(home: str) -> None:
    for key in list(os.environ):
        if key not in ("PATH", "LANG", "CUDA_VISIBLE_DEVICES"):
            del os.environ[key]
    os.environ.update(
        HOME=home,
        TMPDIR=home,
        MPLCONFIGDIR=home,
        MPLBACKEND="Agg",
        USER="student",
        LOGNAME="student",
        PYTHONDONTWRITEBYTECODE="1",
    )
    # named, not found: Python finds its temporary folder by writing a probe file there, and
    # a worker killed before deleting it would leave a file the student did not write
    tempfile.tempdir = home


def _installed_packages(entry: str) -> bool:
    """Whether a ``sys.path`` entry stays in the student's process: the Python installation,
    and folders of installed packages that a ``.pth`` adds from elsewhere (the declaration
    lets it read those); never the repository or a folder above it, nor the current folder."""
    from harness.target import REPO

    if not entry:
        return False
    if entry.startswith((sys.prefix, sys.base_prefix)):
        return True
    path, repo = Path(entry).resolve(), REPO.resolve()
    if path.is_relative_to(repo) or repo.is_relative_to(path):
        return False
    return path.is_dir()


def _serve(folder: str, conf: declaration.Confinement) -> None:
    """The last step in every mode: a clean sys.path, the kernel's rules, then answer
    probe calls."""
    import torch

    from harness import beside, target

    sys.path[:] = [folder] + [p for p in sys.path if _installed_packages(p)]
    # the harness imported before the fork came from the checkout: its modules not yet
    # loaded come from this folder's copy, like the rest of what the process reads, and
    # no finder of an editable install maps a name into the checkout
    sys.modules["harness"].__path__[:] = [str(Path(folder) / "harness")]
    sys.meta_path[:] = [
        f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")
    ]
    # Worker processes started with "spawn" or "forkserver" rebuild __main__ from it: here
    # it would be the grader's own module, which this process cannot and must not see.
    sys.modules["__main__"] = types.ModuleType("__main__")
    target.set_course_root(Path(folder) / "course")
    torch.set_num_threads(conf.limits.threads)
    if conf.private_files:
        os.umask(0o077)  # and the filter keeps it so
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # already set where a uid was dropped to
    landlock.restrict(conf)  # nothing but the declaration may be read or written
    seccomp.install(private_files=conf.private_files)  # no state other sandboxes see
    import faulthandler  # SIGUSR1: every thread's stack to the log (a hung call's trusted
    # side asks where it was before the kill; what comes back can only cost this student)

    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    _report_status(b"ok")  # the last line the grader trusts: student code runs after it
    os.close(STATUS_FD)
    beside.serve(3, 4, Path(folder), Path(folder) / "impl")


def _namespaced_child(conf: declaration.Confinement, work: Path, uid: int, parent: int) -> None:
    """In the forked child: namespaces, root, then the student process as PID 1."""
    from grader.isolation import namespaces

    die_with_parent(parent)
    namespaces.enter(unprivileged=os.geteuid() != 0)
    newroot = work / "root"
    namespaces.build_root(newroot, conf, uid)
    lifeline, held = os.pipe()  # this process holds ``held`` open until it ends
    pid = os.fork()
    if pid == 0:
        os.close(held)
        die_with_parent(lifeline=lifeline)  # PID 1 of its namespace: no parent pid to see
        namespaces.enter_root(newroot)
        # in a user namespace the limit counts only that namespace's processes
        _limit(conf.limits, conf.limits.nproc)
        _become(uid, lifeline=lifeline)
        os.close(lifeline)
        _student_env("/tmp")
        _serve("/sandbox", conf)
        os._exit(0)
    _report_status(f"pid {pid}".encode())  # the student process as the host sees it
    for fd in (3, 4, STATUS_FD, lifeline):
        try:
            os.close(fd)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # end the way the student process did, so the spawner reports the signal
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 128 - code)


def _plain_child(
    conf: declaration.Confinement, folder: Path, work: Path, uid: int | None, parent: int
) -> None:
    die_with_parent(parent)
    os.setsid()
    work.mkdir(mode=0o700)
    if uid is not None:
        os.chown(work, uid, uid)
    os.chdir(work)
    _limit(conf.limits, conf.limits.nproc if uid is not None else _own_nproc(conf.limits.nproc))
    if uid is not None:
        _become(uid, parent)
    _student_env(str(work))
    _serve(str(folder), conf)
    os._exit(0)


def _own_nproc(margin: int) -> int:
    """Without a uid of its own, the limit counts all of this user's threads: add a margin."""
    uid, count = os.getuid(), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(uid)]:
            count += int(fields.get("Threads", "1"))
    return count + margin


# ---- the spawner ---------------------------------------------------------------------

STATUS_FD = 5  # a new student process reports its setup here, then closes it
SETUP_TIMEOUT = 120.0  # seconds a student process may take to be ready (mounts, limits)


def _report_status(line: bytes) -> None:
    os.write(STATUS_FD, line[:2000] + b"\n")


def _await_setup(fd: int, pid: int) -> tuple[int | None, str]:
    """Read a new student process's setup report: (its pid as this process sees it,
    "") once it is ready to run student code, or (None, why) if its setup failed. Nothing
    on this pipe comes from student code: the process closes it before importing any."""
    deadline = time.monotonic() + SETUP_TIMEOUT
    data = b""
    while True:  # until every holder closed it: the student process, and its parent if any
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return None, f"it was not ready within {SETUP_TIMEOUT:g} s (an overloaded machine?)"
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    lines = data.decode(errors="replace").splitlines()
    if "ok" in lines:
        pids = [int(line.split()[1]) for line in lines if line.startswith("pid ")]
        return (pids[-1] if pids else pid), ""
    errors = [line.removeprefix("error ") for line in lines if line.startswith("error ")]
    return None, errors[-1] if errors else "it ended before it was ready"


def run_spawner(sock: socket.socket, settings: dict, parent: int | None = None) -> None:
    """Serve spawn requests on ``sock`` until it closes; report every child's end.

    Request: ``{"op": "spawn", "folder": ..., "work": ...}`` with three descriptors
    (requests to read, replies to write, the log). Reply ``{"pid": ..., "student": ...}``
    once the new process is ready to import student code (``student``: the process that
    runs it, whose CPU use the trusted side watches), or ``{"error": ..., "setup": True}``
    when its setup failed (the grader's failure, never the student's); later
    ``{"exited": pid, "code": ...}`` (negative: the signal).
    """
    die_with_parent(parent)
    # what a student process leaves behind when it ends (a process that left its session)
    # comes back to this process, which ends it (modes without a PID namespace or a uid)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    kind = settings["mode"]
    me = os.getpid()
    children: dict[int, UidSlot | None] = {}
    while True:
        ready, _, _ = select.select([sock], [], [], 0.05)
        _reap(sock, children)
        if not ready:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, 65536, 3)
        except OSError:
            break
        if not data:
            break
        request = json.loads(data)
        # One student process at a time: a new one starts only once everything of the
        # one before is gone (its stray processes, files, IPC objects), so a student's
        # hidden phase cannot meet what its public phase left, whichever uid it gets.
        _end_all(sock, children)
        slot = None
        try:
            slot = UidSlot() if kind in ("namespace", "uid") else None
            uid = slot.uid if slot else os.geteuid()
            folder, work = Path(request["folder"]), Path(request["work"])
            conf = declaration.declare(kind, folder, work, settings)
            if slot:  # this folder, for this uid alone (its group): see grader/sandbox.py
                os.chown(folder, 0, uid)
                os.chmod(folder, 0o550)
            # landlock: the machine's /dev/shm is shared; what appears there is watched
            shm_before = shm.snapshot() if kind == "landlock" else None
            status_r, status_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    _keep_fds({3: fds[0], 4: fds[1], 1: fds[2], 2: fds[2], STATUS_FD: status_w})
                    if os.environ.get(FAULT_ENV) == "sandbox-setup":
                        raise OSError("a sandbox setup failure injected by a test")
                    if conf.namespaces:
                        _namespaced_child(conf, work, uid, me)
                    else:
                        _plain_child(conf, folder, work, uid if slot else None, me)
                except BaseException as exc:  # noqa: BLE001
                    try:
                        os.write(2, f"student process setup failed: {exc!r}\n".encode())
                        _report_status(f"error {exc!r}".encode())
                    finally:
                        os._exit(70)
                os._exit(0)
            children[pid] = slot
            if shm_before is not None:
                _SHM_BEFORE[pid] = shm_before
            os.close(status_w)
            try:
                student, why = _await_setup(status_r, pid)
            finally:
                os.close(status_r)
            if student is None:
                os.kill(pid, signal.SIGKILL)
                reply = {"error": f"the sandbox did not start: {why}", "setup": True}
            else:
                reply = {"pid": pid, "student": student}
        except Exception as exc:  # noqa: BLE001 - report to the trusted side, keep serving
            if slot:
                slot.release()
            reply = {"error": repr(exc)}
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(json.dumps(reply).encode())
    _end_all(sock, children)
    os._exit(0)


_SHM_BEFORE: dict[int, shm.Snapshot] = {}  # landlock: /dev/shm as each student process began


def _end_strays(children: dict) -> None:
    """End the processes a student process left (they came to this subreaper), until
    none is left: every child that is not a student process is a stray."""
    for _ in range(100):
        try:
            listed = Path(f"/proc/self/task/{os.getpid()}/children").read_text().split()
        except OSError:
            return
        strays = [int(p) for p in listed if int(p) not in children]
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _end_all(sock: socket.socket, children: dict) -> None:
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        _ended(sock, children, pid, status)


def ended_children():
    """``(pid, wait status)`` of each child that has ended, waiting for none that has not."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def _reap(sock: socket.socket, children: dict) -> None:
    for pid, status in ended_children():
        if pid in children:
            _ended(sock, children, pid, status)


def _ended(sock: socket.socket, children: dict, pid: int, status: int) -> None:
    slot = children.pop(pid, None)
    if slot:
        clear_uid(slot.uid)  # nothing of this sandbox outlives it, before the uid is reused
        slot.release()
    else:
        _end_strays(children)
        before = _SHM_BEFORE.pop(pid, None)
        if before is not None:  # its processes are all gone: what it left there goes
            shm.remove_new(before)
    try:
        sock.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
    except OSError:
        pass
