"""Start the processes the student's code runs in, and nothing else.

``run_spawner`` is a small server forked from the trusted test process before it
loads any test (so it holds no test, no reference answer, no solution). On request it
starts one student process for one chapter and phase, with the pipes it is handed,
and reports when it ends. Three ways, best first (``mode()``):

- ``namespace`` (root, ``unshare`` allowed): new mount, PID, network, IPC and UTS
  namespaces; a root of its own holding only the system's and Python's files (read
  only), the chapter's sandbox folder at ``/sandbox`` (read only), and private ``/tmp``
  and ``/dev/shm`` of bounded size that vanish with it; no network at all; an
  unprivileged uid no other live sandbox holds; every process it starts dies with it.
- ``uid`` (root, namespaces refused, e.g. inside a Gradescope container): an
  unprivileged uid of its own, the limits, a private working folder, a process-group
  kill. It can read what any user may read.
- ``session`` (not root): the same user in a new session with the limits. Weakest;
  for a self-learner checking their own work.

Every student process gets ``PR_SET_PDEATHSIG``: it dies when the process that started
it dies, so a grader killed with SIGKILL leaves nothing running. In every mode a seccomp
filter (``grader.seccomp``) refuses the kernel's shared objects that no namespace here
separates (keyrings, file locks and watches, page-cache queries), and when a sandbox
uid's process ends, everything of that uid is removed (``clear_uid``) before another
sandbox may take the uid.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from grader import seccomp

# Sandbox uids: GRADER_UID_BASE moves the range (the project's tests use their own).
UID_BASE = int(os.environ.get("GRADER_UID_BASE", "61000"))
UID_COUNT = 1000
# One folder for every grader on the machine, whatever TMPDIR each has (a cluster sets one
# per job): a lock another grader cannot see would let two of them share a uid.
LOCK_DIR = Path("/run" if os.access("/run", os.W_OK) else "/tmp") / "grader-uids"

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
DEVICES = ("null", "zero", "full", "random", "urandom")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None):
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(
        _libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {dst}",
    )


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


@functools.cache
def mode() -> str:
    """``namespace``, ``uid`` or ``session`` (see the module doc). ``GRADER_ISOLATION``
    forces a weaker one (to test it)."""
    forced = os.environ.get("GRADER_ISOLATION")
    if os.geteuid() != 0:
        return "session"
    if forced in ("uid", "session"):
        return forced
    if not shutil.which("unshare"):
        return "uid"
    probe = subprocess.run(
        ["unshare", "--mount", "--pid", "--net", "--ipc", "--fork", "--kill-child", "true"],
        capture_output=True,
        timeout=30,
    )
    return "namespace" if probe.returncode == 0 else "uid"


DESCRIPTION = {
    "namespace": "isolation: own namespaces (private filesystem, no network, own uid), "
    "limits on memory, processes and file size",
    "uid": "isolation: an unprivileged uid of its own and limits, but no namespaces "
    "(refused here): it could read files any user may read",
    "session": "isolation: the grader's own user in a new session, with limits (the "
    "grader does not run as root here)",
}


# ---- uids ------------------------------------------------------------------------------


def _uids_in_use() -> set[int]:
    uids = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            for line in status.read_text().splitlines():
                if line.startswith("Uid:"):
                    uids.add(int(line.split()[1]))
                    break
        except (OSError, ValueError, IndexError):
            continue
    return uids


class UidSlot:
    """An unprivileged uid held exclusively through a lock file (across graders), with
    nothing of an earlier sandbox left under it: a grader holds a uid's lock for as long
    as its sandbox runs, so whatever is left under a uid whose lock is free — processes
    (of a grader killed with SIGKILL, or that slipped out of their group), files, IPC
    objects — is an orphan and is cleared before the uid is used again."""

    def __init__(self) -> None:
        LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        busy = _uids_in_use()
        for uid in sorted(range(UID_BASE, UID_BASE + UID_COUNT), key=lambda u: u in busy):
            fd = os.open(LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            clear_uid(uid)  # what a grader killed mid-way may have left (files, IPC, strays)
            if uid in busy and uid in _uids_in_use():
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError("no free sandbox uid")

    def release(self) -> None:
        os.close(self._fd)


def _kill_uid(uid: int) -> None:
    for _ in range(5):  # a process may fork while it is being killed: look again
        found = False
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                line = next(x for x in status.read_text().splitlines() if x.startswith("Uid:"))
                if int(line.split()[1]) == uid:
                    os.kill(int(status.parent.name), signal.SIGKILL)
                    found = True
            except (OSError, StopIteration, ValueError, IndexError):
                continue
        if not found:
            return
        time.sleep(0.01)


SHARED_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue")


def _remove_files_of(uid: int) -> None:
    """What ``uid`` left in the folders every user may write (the ``uid`` mode has no
    private ``/tmp``): it can only have created entries of its own at their top."""
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
    """System V shared memory, message queues and semaphores owned by ``uid`` (outside
    an IPC namespace they outlive their process)."""
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
                        _libc.semctl(ident, 0, 0)  # IPC_RMID
                    else:
                        getattr(_libc, call)(ident, 0, None)
            except (TypeError, ValueError):
                continue


def clear_uid(uid: int) -> None:
    """End everything a sandbox uid may have left: its processes, its files in shared
    writable folders, its System V IPC objects. (Keyrings cannot hold anything: the
    seccomp filter refuses them.)"""
    _kill_uid(uid)
    _remove_files_of(uid)
    _remove_ipc_of(uid)


# ---- one student process -----------------------------------------------------------


def _limit(settings: dict, nproc: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for res, value in (
        (resource.RLIMIT_AS, settings["memory_mb"] << 20),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, settings["fsize_mb"] << 20),
        (resource.RLIMIT_NOFILE, 1024),
    ):
        resource.setrlimit(res, (value, value))


def _drop_to(uid: int, parent: int | None = None, lifeline: int | None = None) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    die_with_parent(parent, lifeline)  # a change of credentials clears it


def _keep_fds(keep: dict[int, int]) -> None:
    """Make ``keep`` (target fd -> current fd) the only open descriptors."""
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


def _host_paths(repo: Path | None = None, private: tuple[Path, ...] = ()) -> list[Path]:
    """What the student's root needs from the host besides its own folder: the system,
    the Python installation and every folder on ``sys.path`` that holds installed
    packages (a ``.pth`` may point outside the environment). Never the repository (a
    virtual environment inside it brings only itself) and never a folder that holds the
    repository or the grader's sandboxes (``private``)."""
    from harness.target import REPO

    repo = Path(repo or REPO).resolve()
    prefixes = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    wanted = [Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")]
    wanted += prefixes
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if not path.is_dir() or any(path.is_relative_to(p) for p in prefixes):
            continue
        if path.is_relative_to(repo) or repo.is_relative_to(path):
            continue  # the repository holds the solutions and the hidden tests
        wanted.append(path)
    found: list[Path] = []
    for p in sorted({w for w in wanted if w.exists()}, key=lambda q: len(q.parts)):
        if any(q.is_relative_to(p) for q in private) or p == Path("/"):
            continue
        if not any(p.is_relative_to(f) for f in found if not f.is_symlink()):
            found.append(p)
    return found


def _bind_read_only(host: Path, inside: Path) -> None:
    inside.mkdir(parents=True, exist_ok=True)
    _mount(str(host), str(inside), None, MS_BIND | MS_REC)
    _mount(None, str(inside), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _build_root(newroot: Path, folder: Path, settings: dict) -> None:
    """Mounts of the student's root (in a new mount namespace).

    The private ``/tmp`` and ``/dev/shm`` come first: a Python installation or a clone
    of the course may itself live under ``/tmp``, and its bind mount must land inside
    the private ``/tmp`` (read-only), not be hidden by it or collide with it.
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    newroot.mkdir(parents=True, exist_ok=True)
    _mount("tmpfs", str(newroot), "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    (newroot / "tmp").mkdir()
    _mount(
        "tmpfs",
        str(newroot / "tmp"),
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"size={settings['tmp_mb']}m,mode=1777",
    )
    dev = newroot / "dev"
    dev.mkdir()
    _mount("tmpfs", str(dev), "tmpfs", MS_NOSUID, "size=64k,mode=755")
    for name in DEVICES:
        (dev / name).touch()
        _mount(f"/dev/{name}", str(dev / name), None, MS_BIND)
    for gpu in sorted(Path("/dev").glob("nvidia*")):
        if gpu.is_char_device():
            (dev / gpu.name).touch()
            _mount(str(gpu), str(dev / gpu.name), None, MS_BIND)
    (dev / "fd").symlink_to("/proc/self/fd")
    (dev / "shm").mkdir()
    _mount(
        "tmpfs",
        str(dev / "shm"),
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        f"size={settings['shm_mb']}m,mode=1777",
    )
    private = (folder.resolve(), newroot.resolve())
    for host in _host_paths(settings.get("repo"), private):
        inside = newroot / host.relative_to("/")
        if host.is_symlink() and str(host.parent) == "/":
            inside.symlink_to(os.readlink(host))
            continue
        _bind_read_only(host, inside)
    etc = newroot / "etc"
    etc.mkdir(exist_ok=True)
    for name in ("ld.so.cache", "localtime"):
        if Path("/etc", name).exists():
            shutil.copyfile(Path("/etc", name), etc / name, follow_symlinks=True)
    uid = settings.get("uid") or 65534
    (etc / "passwd").write_text(
        f"root:x:0:0::/:/bin/false\nstudent:x:{uid}:{uid}::/tmp:/bin/false\n"
    )
    (etc / "group").write_text(f"root:x:0:\nstudent:x:{uid}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    sandbox = newroot / "sandbox"
    sandbox.mkdir()
    _mount(str(folder), str(sandbox), None, MS_BIND | MS_REC)
    _mount(None, str(sandbox), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    (newroot / "proc").mkdir()
    _mount(None, str(newroot), None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


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
    tempfile.tempdir = None


def _installed_packages(entry: str) -> bool:
    """Whether a ``sys.path`` entry stays in the student's process: the Python installation,
    and folders of installed packages that a ``.pth`` adds from elsewhere (``_host_paths``
    binds those in); never the repository or a folder above it, nor the current folder."""
    from harness.target import REPO

    if not entry:
        return False
    if entry.startswith((sys.prefix, sys.base_prefix)):
        return True
    path, repo = Path(entry).resolve(), REPO.resolve()
    if path.is_relative_to(repo) or repo.is_relative_to(path):
        return False
    return path.is_dir()


def _serve(folder: str, settings: dict) -> None:
    """The last step in every mode: a clean sys.path, then answer probe calls."""
    import torch

    from harness import beside, target

    sys.path[:] = [folder] + [p for p in sys.path if _installed_packages(p)]
    # Worker processes started with "spawn" or "forkserver" rebuild __main__ from it: here
    # it would be the grader's own module, which this process cannot and must not see.
    sys.modules["__main__"] = types.ModuleType("__main__")
    target.set_course_root(Path(folder) / "course")
    torch.set_num_threads(int(settings.get("threads", 1)))
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # already set where a uid was dropped to
    seccomp.install()  # no keyrings, locks, watches, page-cache queries: state others see
    _report_status(b"ok")  # the last line the grader trusts: student code runs after it
    os.close(STATUS_FD)
    beside.serve(3, 4, Path(folder), Path(folder) / "impl")


def _namespaced_child(folder: Path, work: Path, settings: dict, uid: int, parent: int) -> None:
    """In the forked child: namespaces, root, then the student process as PID 1."""
    die_with_parent(parent)
    _check(
        _libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
        "unshare",
    )
    newroot = work / "root"
    _build_root(newroot, folder, settings | {"uid": uid})
    lifeline, held = os.pipe()  # this process holds ``held`` open until it ends
    pid = os.fork()
    if pid == 0:
        os.close(held)
        die_with_parent(lifeline=lifeline)  # PID 1 of its namespace: no parent pid to see
        _mount("proc", str(newroot / "proc"), "proc", MS_NOSUID | MS_NODEV)
        os.chroot(newroot)
        os.chdir("/tmp")
        _limit(settings, settings["nproc"])
        _drop_to(uid, lifeline=lifeline)
        os.close(lifeline)
        _student_env("/tmp")
        _serve("/sandbox", settings)
        os._exit(0)
    _report_status(f"pid {pid}".encode())  # the student process as the host sees it
    for fd in (3, 4, STATUS_FD, lifeline):
        try:
            os.close(fd)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)


def _plain_child(folder: Path, work: Path, settings: dict, uid: int | None, parent: int) -> None:
    die_with_parent(parent)
    os.setsid()
    work.mkdir(mode=0o700)
    if uid is not None:
        os.chown(work, uid, uid)
    os.chdir(work)
    nproc = settings["nproc"] if uid is not None else _session_nproc(settings["nproc"])
    _limit(settings, nproc)
    if uid is not None:
        _drop_to(uid, parent)
    _student_env(str(work))
    _serve(str(folder), settings)
    os._exit(0)


def _session_nproc(margin: int) -> int:
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
# The project's tests make the grader's own machinery fail on purpose with this variable
# ("sandbox-setup"), to prove such failures are never charged to a student.
FAULT_ENV = "GRADER_TEST_FAULT"
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
            uid = slot.uid if slot else None
            folder, work = Path(request["folder"]), Path(request["work"])
            if uid is not None:  # this folder, for this uid alone (its group): see sandbox
                os.chown(folder, 0, uid)
                os.chmod(folder, 0o550)
            status_r, status_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    _keep_fds({3: fds[0], 4: fds[1], 1: fds[2], 2: fds[2], STATUS_FD: status_w})
                    null = os.open(os.devnull, os.O_RDONLY)
                    os.dup2(null, 0)
                    os.close(null)
                    if os.environ.get(FAULT_ENV) == "sandbox-setup":
                        raise OSError("a sandbox setup failure injected by a test")
                    if kind == "namespace":
                        _namespaced_child(folder, work, settings, uid, me)
                    else:
                        _plain_child(folder, work, settings, uid, me)
                except BaseException as exc:  # noqa: BLE001
                    try:
                        os.write(2, f"student process setup failed: {exc!r}\n".encode())
                        _report_status(f"error {exc!r}".encode())
                    finally:
                        os._exit(70)
                os._exit(0)
            children[pid] = slot
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
    for pid, slot in children.items():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if slot:
            clear_uid(slot.uid)
            slot.release()
    os._exit(0)


def _end_all(sock: socket.socket, children: dict) -> None:
    for pid in list(children):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        _ended(sock, children, pid, status)


def _reap(sock: socket.socket, children: dict) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _ended(sock, children, pid, status)


def _ended(sock: socket.socket, children: dict, pid: int, status: int) -> None:
    slot = children.pop(pid, None)
    if slot:
        clear_uid(slot.uid)  # nothing of this sandbox outlives it, before the uid is reused
        slot.release()
    try:
        sock.send(json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}).encode())
    except OSError:
        pass
