"""A warm parent for the grader's trusted test processes (``grader.verdict``).

Each submission's tests run in a trusted process of their own. Started fresh, that
process imports torch, pytest, hypothesis and the harness first: ~3 s of CPU per
submission, more than many submissions' tests take. The warm parent imports them once
and forks one trusted process per run, as the selfcheck and the student processes do.

No student code ever runs here or in the forked process before its spawner starts (the
same order as a fresh ``grader.verdict``). The warm parent ends when the grader closes
its end of the socket, including when the grader is killed; every process it forked dies
with it (``spawner.die_with_parent``).

    proc = warm.start([config_path], results_fd, log_fd, env, preload)  # forked or fresh
    code, log = warm.run([config_path, "--collect"], env, timeout, preload)

Where no warm parent can start, each run starts fresh, as before it existed.

One warm parent per environment and set of preloaded modules (``torch._dynamo`` for
the chapters that need it: ~0.6 s of CPU that a run of ch00 alone need not pay).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback

from harness.target import REPO

STATUS = struct.Struct("i")
PYTHON = [sys.executable, "-E", "-s", "-m"]  # trusted: no PYTHON* variables, no user site


def kill_group(proc: Started | subprocess.Popen) -> None:
    """SIGKILL a run and every process of its group (each run leads a group of its own)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class Started:
    """A trusted process the warm parent forked: its pid (the leader of its own process
    group), and a pipe that carries its wait status when it ends."""

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid = pid
        self.status_fd = status_fd
        self.returncode: int | None = None
        self.ended = False

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code once it has ended; raises ``subprocess.TimeoutExpired`` before."""
        if not self.ended:
            ready, _, _ = select.select([self.status_fd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired("grader.verdict", timeout or 0)
            data = os.read(self.status_fd, STATUS.size)
            os.close(self.status_fd)
            self.ended = True
            if len(data) == STATUS.size:
                self.returncode = os.waitstatus_to_exitcode(STATUS.unpack(data)[0])
        return self.returncode

    def kill(self) -> None:
        kill_group(self)


class _Parent:
    def __init__(self, env: dict, preload: tuple[str, ...] = ()) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen(
            [*PYTHON, "grader.warm", str(theirs.fileno()), *preload],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # a run's output goes to its own log
            stderr=subprocess.DEVNULL,  # a parent that fails to start is not used: see start
            cwd=REPO,
            env=env,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        self.lock = threading.Lock()

    def start(self, argv: list[str], results_fd: int, log_fd: int, env: dict) -> Started:
        status_read, status_write = os.pipe()
        try:
            with self.lock:
                # what a process started here would inherit from its caller
                cpus = sorted(os.sched_getaffinity(0))
                request = json.dumps({"argv": argv, "env": env, "cpus": cpus}).encode()
                socket.send_fds(self.sock, [request], [results_fd, log_fd, status_write])
                reply = self.sock.recv(64)
        finally:
            os.close(status_write)
        if not reply:
            os.close(status_read)
            raise OSError("the warm parent ended")
        return Started(int(reply), status_read)


_parents: dict[tuple, _Parent] = {}
_parents_lock = threading.Lock()


def start(
    argv: list[str], results_fd: int, log_fd: int, env: dict, preload: list[str] | None = None
) -> Started | subprocess.Popen:
    """``grader.verdict``'s run of ``argv``, writing its results to ``results_fd`` and its
    output to ``log_fd``: forked from the warm parent with this environment that imported
    ``preload``, or started fresh where that parent cannot start."""
    forked = _fork(argv, results_fd, log_fd, env, tuple(preload or ()))
    return forked or subprocess.Popen(
        [*PYTHON, "grader.verdict", *argv],
        stdin=subprocess.DEVNULL,
        stdout=log_fd,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        env=env,
        pass_fds=(results_fd,),
        start_new_session=True,
    )


def _fork(
    argv: list[str], results_fd: int, log_fd: int, env: dict, modules: tuple[str, ...]
) -> Started | None:
    """The run forked from the warm parent (started on first use), or None."""
    key = (tuple(sorted(env.items())), modules)
    try:
        with _parents_lock:
            parent = _parents.get(key)
            if parent is None or parent.proc.poll() is not None:
                parent = _parents[key] = _Parent(env, modules)
        return parent.start(argv, results_fd, log_fd, env)
    except OSError:
        with _parents_lock:
            _parents.pop(key, None)
        return None


def run(
    argv: list[str], env: dict, timeout: float, preload: list[str] | None = None
) -> tuple[int | None, str]:
    """``grader.verdict``'s run of ``argv`` to its end: (exit code, what it printed).
    Past ``timeout`` it is killed."""
    with tempfile.TemporaryFile() as log:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            proc = start(argv, null, log.fileno(), env, preload)
        finally:
            os.close(null)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            code = proc.wait()
        log.seek(0)
        return code, log.read().decode(errors="replace")


# ---- the warm parent itself ------------------------------------------------------------------


def _preload(modules: list[str]) -> None:
    """What every trusted run imports, and ``modules`` (its chapters' preload), once."""
    import importlib

    import pytest  # noqa: F401
    import torch

    from harness import beside, evidence, index, judge, plugin, probe, target, wire  # noqa: F401

    torch.set_num_threads(1)  # no thread pool exists before a fork
    with contextlib.suppress(ImportError):  # the hidden tests' (the grader extra)
        import hypothesis  # noqa: F401
    for name in modules:
        with contextlib.suppress(ImportError):  # the run imports it again and says why
            importlib.import_module(name)
    judge.warm_up()
    probe.warm_up()
    from grader import verdict  # noqa: F401


def _reap(children: dict[int, int], ended) -> None:
    """Send each ended run's wait status (``ended``: pid, status pairs) down its pipe."""
    for pid, status in ended:
        fd = children.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, STATUS.pack(status))
            os.close(fd)


def _run_child(sock: socket.socket, request: dict, fds: list[int], others: list[int]) -> None:
    """In the forked child: become the trusted process ``grader.verdict`` would be, holding
    nothing of the warm parent's (its socket, the other runs' status pipes)."""
    from grader import verdict

    code = 1
    try:
        sock.close()
        results_fd, log_fd, status_fd = fds
        for fd in [status_fd, *others]:
            os.close(fd)
        os.setsid()
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(request["env"])
        with contextlib.suppress(OSError):  # the cores its caller is held to (a test's load)
            os.sched_setaffinity(0, request["cpus"])
        code = verdict.main(request["argv"], results_fd, os.getppid())
    except BaseException:  # noqa: BLE001 - its log says why; its status says it failed
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        os._exit(code)


def serve(fd: int, preload: list[str]) -> None:
    sock = socket.socket(fileno=fd)
    _preload(preload)
    from grader.isolation.spawner import ended_children

    children: dict[int, int] = {}
    signal.signal(signal.SIGCHLD, lambda *_: _reap(children, ended_children()))
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        except InterruptedError:
            continue
        if not message:
            break  # the grader closed its end, or ended
        request = json.loads(message)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        pid = os.fork()
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            _run_child(sock, request, fds, list(children.values()))
        children[pid] = fds[2]
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        os.close(fds[0])
        os.close(fds[1])
        sock.send(str(pid).encode())
    os._exit(0)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2:])
