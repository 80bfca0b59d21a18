"""The trusted side of a grading run: the tests' assertions, with the student's code
in other processes.

    python -m grader.verdict CONFIG             # run the tests, stream results
    python -m grader.verdict CONFIG --collect   # list the tests (no student code at all)

One pytest session over the chosen chapters' public and hidden test files, from the
repository itself. No submission code ever runs in this process: ``harness.target``
refuses to load a student module here, and every probe call goes to a student process
(``SplitTransport``) started by the spawner (``grader.isolation.spawner``), which is
forked before any test file is imported. What comes back is decoded by ``harness.wire``
— plain data only — and judged here. Results go to the grader as JSON lines on an inherited pipe.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.5  # how often a long wait re-reads the student processes' clocks


# ---- time: what the student's code used, not what a busy machine took -----------------


def backstop(limit: float) -> float:
    """The wall-clock bound of a call whose own time limit is ``limit``: far above what an
    idle machine needs, so it ends only a machine too busy to grade on (or a hang where the
    clocks cannot be read)."""
    return 4 * limit + 60


def _run_delay(pid: int, tid: int) -> float | None:
    """Seconds thread ``tid`` of ``pid`` has spent ready to run but waiting for a CPU
    (Linux's schedstat)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (one pass over /proc, a few milliseconds)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                text = f.read()
            ppid = int(text[text.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


class _Waiting:
    """How long a busy machine made the call wait for a CPU since it began: the most that
    any thread of the student's process tree waited (the largest, not the sum: a main
    process asleep while its starved workers wait was slowed by their wait, once), plus
    what this thread waited. This thread runs before and after the student's code —
    sending the request, waking to read the reply — not beside it, so its waits add to
    theirs; on a loaded machine a short call is mostly those two wake-ups."""

    def __init__(self, root: int | None) -> None:
        self.root = root
        self.me = (os.getpid(), threading.get_native_id())
        self.first: dict[tuple[int, int], float] = {}
        self.most = 0.0  # the student's tree
        self.mine = 0.0  # this thread
        self.readable = root is not None and self.sample([root])

    @property
    def total(self) -> float:
        return self.most + self.mine

    def _note(self, pid: int, tid: int) -> float | None:
        delay = _run_delay(pid, tid)
        if delay is None:
            return None
        return delay - self.first.setdefault((pid, tid), delay)

    def sample(self, pids: list[int] | None = None) -> bool:
        """Read the clocks of ``pids`` (default: the whole tree, a walk of /proc)."""
        if self.root is None:
            return False
        seen = False
        for pid in pids if pids is not None else _descendants(self.root):
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except (OSError, ValueError):
                continue
            for tid in tids:
                waited = self._note(pid, tid)
                if waited is not None:
                    seen = True
                    self.most = max(self.most, waited)
        self.mine = max(self.mine, self._note(*self.me) or 0.0)
        return seen


class Budget:
    """How long one call into the student's code may run: ``limit`` seconds of the time it
    would have taken on an idle machine — the wall clock minus the time the student's
    processes waited for a CPU that other work held — so a busy machine never turns a
    correct answer into a timeout, and code that sleeps or blocks is still bounded. The
    wall clock ends the call at ``backstop(limit)``: then the machine was too busy to tell,
    and the test is not graded (``NotGraded``)."""

    def __init__(self, limit: float, pid: int | None) -> None:
        self.limit = max(0.0, limit)
        self.start = time.monotonic()
        self.waiting = _Waiting(pid)
        self.spent = 0.0  # the idle-machine time used, as of the last look

    def wall(self) -> float:
        return time.monotonic() - self.start

    def used(self, quick: bool = False) -> float:
        """The idle-machine time used so far (``quick``: read the student's main process
        and this thread only, not the whole tree)."""
        if self.waiting.readable:
            self.waiting.sample([self.waiting.root] if quick else None)
        self.spent = max(0.0, self.wall() - self.waiting.total)
        return self.spent

    def settle(self) -> float:
        """The time used by a call that has ended. A short one reads only the clocks of the
        main process and this thread (a walk of /proc would cost more than the call):
        hundreds of short calls on a busy machine are mostly waits, and must not add up
        to a timeout."""
        return self.used(quick=self.wall() < POLL_S)

    def wait(self, rfds: list[int], wfds: list[int]) -> bool:
        """Wait until a descriptor is ready (True), or the budget is spent (False);
        raise ``NotGraded`` when the backstop ends the wait first."""
        from harness.probe import NotGraded

        while True:
            left = min(self.limit - self.spent, backstop(self.limit) - self.wall())
            r, w, _ = select.select(rfds, wfds, [], max(0.0, min(POLL_S, left)))
            if r or w:
                return True
            if self.used() >= self.limit:
                return False
            if self.wall() >= backstop(self.limit):
                raise NotGraded(
                    f"not graded: the machine was too busy to run this test (your code got "
                    f"{self.spent:.0f} s of its {self.limit:g} s in {self.wall():.0f} s of "
                    "wall time); grading again runs it"
                )


# CPU seconds a reply may always take to decode, however little of its call's time is left.
DECODE_FLOOR_S = 0.25

SPAWN_WAIT_S = 180  # the spawner's own setup bound (spawner.SETUP_TIMEOUT) plus a margin
EXIT_WAIT_S = 3.0  # how long a process whose pipe closed may take to end on its own


class SandboxFailure(RuntimeError):
    """A student process could not be started: the grader's failure, never the student's."""


class SpawnerClient:
    """Asks the spawner for student processes and learns how they ended."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.exits: dict[int, int] = {}

    def _receive(self, timeout: float) -> dict | None:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return None
        data = self.sock.recv(65536)
        if not data:
            raise SandboxFailure("the grader's spawner ended")
        return json.loads(data)

    def spawn(self, folder: Path, work: Path, log_fd: int) -> StudentProcess:
        to_student_r, to_student_w = os.pipe()
        from_student_r, from_student_w = os.pipe()
        try:
            request = {"op": "spawn", "folder": str(folder), "work": str(work)}
            socket.send_fds(
                self.sock, [json.dumps(request).encode()], [to_student_r, from_student_w, log_fd]
            )
        finally:
            os.close(to_student_r)
            os.close(from_student_w)
        while True:
            msg = self._receive(SPAWN_WAIT_S)
            if msg is None:
                raise SandboxFailure(f"the grader's spawner did not answer in {SPAWN_WAIT_S} s")
            if "exited" in msg:
                self.exits[msg["exited"]] = msg["code"]
                continue
            if "error" in msg:
                os.close(to_student_w)
                os.close(from_student_r)
                raise SandboxFailure(str(msg["error"]))
            student = msg.get("student", msg["pid"])
            return StudentProcess(msg["pid"], to_student_w, from_student_r, self, student)

    def exit_code(self, pid: int, timeout: float = 5.0) -> int | None:
        deadline = time.monotonic() + timeout
        while pid not in self.exits:
            msg = self._receive(deadline - time.monotonic())
            if msg is None:
                return None
            if "exited" in msg:
                self.exits[msg["exited"]] = msg["code"]
        return self.exits.pop(pid)


class Gone(Exception):
    """The student process ended (EOF), ran out of time, or sent something that is not
    a reply (``tampered``); it has been killed either way. ``code`` is how it ended on
    its own (the spawner's report, see ``how_it_ended``), ``lingered`` that it closed
    its pipes but did not end."""

    def __init__(
        self, timed_out: bool, code: int | None, tampered: str = "", lingered: bool = False
    ) -> None:
        self.timed_out, self.code, self.tampered = timed_out, code, tampered
        self.lingered = lingered


class StudentProcess:
    def __init__(
        self, pid: int, to_fd: int, from_fd: int, client: SpawnerClient, student: int
    ) -> None:
        self.pid, self.to_fd, self.from_fd, self.client = pid, to_fd, from_fd, client
        self.student = student  # the process that runs student code (its clocks are read)
        self.alive = True
        self.on_timeout: Callable[[StudentProcess], None] | None = None  # before the kill
        os.set_blocking(to_fd, False)

    def ask(self, request, budget: Budget):
        """Send one request and return the decoded reply, or raise ``Gone``."""
        from harness import wire

        payload = wire.encode(request)
        self._write(struct.pack(">Q", len(payload)) + payload, budget)
        head = self._read(8, budget)
        (size,) = struct.unpack(">Q", head)
        if size > wire.MAX_FRAME_BYTES:
            self.kill()
            raise Gone(
                False, None, f"a reply of {size} bytes (more than {wire.MAX_FRAME_BYTES >> 20} MiB)"
            )
        frame = self._read(size, budget)
        try:  # checking the reply is part of the call: what is left of its time, at least
            # a floor that no honest reply needs (a crafted one costs about a second)
            left = max(budget.limit - budget.used(quick=True), DECODE_FLOOR_S)
            reply = wire.decode(frame, cpu_seconds=left)
        except wire.OutOfTime:
            self.kill()
            raise Gone(True, None) from None
        except wire.WireError as exc:
            self.kill()
            raise Gone(False, None, f"bytes that are not plain data ({exc})") from None
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            self.kill()
            raise Gone(False, None, "a reply of the wrong form")
        return reply

    def _write(self, data: bytes, budget: Budget) -> None:
        view = memoryview(data)
        while view:
            if not self._wait(budget, [], [self.to_fd]):
                self._gone(timed_out=True)
            try:
                view = view[os.write(self.to_fd, view) :]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                self._gone(timed_out=False)

    def _read(self, n: int, budget: Budget) -> bytearray:
        """``n`` bytes, read in place: a frame is held once, never once per chunk and
        again joined."""
        data = bytearray(n)
        view, got = memoryview(data), 0
        while got < n:
            if not self._wait(budget, [self.from_fd], []):
                self._gone(timed_out=True)
            k = os.readv(self.from_fd, [view[got : min(n, got + (1 << 20))]])
            if not k:
                self._gone(timed_out=False)
            got += k
        view.release()
        return data

    def _wait(self, budget: Budget, rfds: list[int], wfds: list[int]) -> bool:
        try:
            return budget.wait(rfds, wfds)
        except Exception:
            self.kill()
            raise

    def _gone(self, timed_out: bool):
        """End the call: a process out of time is asked where it was (``on_timeout``),
        then killed; one whose pipe closed is waited for first, so the report of how it
        ended is its own doing, not the kill's."""
        if timed_out:
            if self.on_timeout is not None:
                self.on_timeout(self)
            self.kill()
            raise Gone(True, None)
        self._close_pipes()
        code = self.client.exit_code(self.pid, timeout=EXIT_WAIT_S)
        self.kill()
        if code is None:  # its pipes closed, and it is still running
            raise Gone(False, self.client.exit_code(self.pid), lingered=True)
        raise Gone(False, code)

    def _close_pipes(self) -> None:
        for fd in (self.to_fd, self.from_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        self.to_fd = self.from_fd = -1

    def kill(self) -> None:
        if not self.alive:
            return
        self.alive = False
        self._close_pipes()
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass


def tampering_message(gone: Gone) -> str:
    return (
        f"tampering: the process running your code sent back {gone.tampered} instead of "
        "the tests' reply, so it was stopped and this test failed"
    )


SIGNALS = {  # what a signal that ended a student process most likely means, in its terms
    9: "killed by signal 9 (SIGKILL): out of memory, or stopped from outside",
    11: "a crash in native code (signal 11, SIGSEGV: a bad memory access)",
    7: "a crash in native code (signal 7, SIGBUS: a bad memory access)",
    4: "a crash in native code (signal 4, SIGILL)",
    8: "a crash in native code (signal 8, SIGFPE: an integer division by zero)",
    6: "aborted (signal 6, SIGABRT: native code gave up, or os.abort())",
    31: "stopped by the sandbox (signal 31, SIGSYS: a system call it does not allow)",
}


def how_it_ended(code: int | None) -> str:
    """How a student process ended, in the student's terms. ``code`` is the spawner's
    report: the exit status, or minus the signal (a namespace's PID 1 passes its signal
    on to the process the spawner waits for)."""
    if code is None:
        return "it did not say how"
    sig = -code if code < 0 else 0
    if sig:
        if sig in SIGNALS:
            return SIGNALS[sig]
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "unknown"
        return f"ended by signal {sig} ({name}), sent by your code or a process it started"
    return (
        f"it exited with status {code}: os._exit({code}), or exit() in native code (sys.exit "
        "in the main thread only raises SystemExit)"
    )


class SplitTransport:
    """``harness.probe``'s transport on the grader's trusted side (see module doc).

    A call that hangs costs its own test, not the chapter: its process is asked where it
    was (SIGUSR1, ``faulthandler``'s dump in the student log), killed and replaced, and
    the function it hung in is noted (``harness.calls.Hangs``): the name called from a
    test body, or for a probe the top-level definition of the student's module that the
    dump shows the probe entered. A later call that may reach a noted function — its
    name, or a probe whose source uses it on the handle — fails at once without a
    process, and so does a later call of a probe that hung where no function could be
    named. A probe whose reach is unknown is never refused by name. The dump comes from
    the student's process: a lie can only note a function that did not hang, which
    refuses that student's own later tests; nothing it says can pass a test. A call cut
    by the wall-clock backstop (a busy machine, not graded) notes nothing."""

    name = "split"

    def __init__(self, client: SpawnerClient, config: dict) -> None:
        from harness.calls import Hangs

        self.client = client
        self.config = config
        self.folders = {k: Path(v) for k, v in config["students"].items()}
        self.modules = config["modules"]  # chapter -> module name
        self.test_timeout = float(config["test_timeout"])
        self.import_timeout = float(config.get("import_timeout") or self.test_timeout)
        self.log_path = Path(config["log"])
        self.log_fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.work = Path(config["work"])
        self.spawned = 0
        self.process: StudentProcess | None = None
        self.key: str | None = None
        self.broken: dict[str, BaseException] = {}  # chapter -> the error every call gets
        self.hangs = Hangs()
        self.sources = self._read_sources()
        self.nodeid, self.limit, self.spent = "", self.test_timeout, 0.0

    def _read_sources(self) -> dict[tuple[str, str], str]:
        """Each submitted module's text, read before any student process starts (so
        nothing the student's code does can change what the tests read)."""
        found = {}
        for chapter, module in self.modules.items():
            for phase in ("public", "hidden"):
                folder = self.folders.get(f"{chapter}-{phase}")
                try:
                    path = folder / "impl" / chapter / f"{module}.py"
                    found[chapter, module] = path.read_text(encoding="utf-8")
                    break
                except (OSError, UnicodeDecodeError, TypeError):
                    continue
        return found

    def submitted_source(self, chapter: str, module: str) -> str | None:
        """The submission's module as the grader gave it to the student's process
        (``harness.source_rules``)."""
        return self.sources.get((chapter, module))

    def begin_test(self, nodeid: str, timeout: float | None) -> None:
        """A test's calls into the student's code share its time limit."""
        self.nodeid = nodeid
        self.limit = float(timeout or self.test_timeout)
        self.spent = 0.0

    def end_test(self) -> None:
        pass

    def close(self) -> None:
        if self.process:
            self.process.kill()
        self.process = None

    def _key(self) -> tuple[str, str]:
        path = self.nodeid.split("::")[0]
        chapter = Path(path).parent.name
        phase = "hidden" if path.startswith("grader/hidden/") else "public"
        return chapter, phase

    def _start(self, chapter: str, phase: str) -> StudentProcess:
        from harness.probe import NotGraded, StudentCrashed, StudentTimeout, rebuilt_error
        from harness.target import TargetImportError

        key = f"{chapter}-{phase}"
        if self.key != key or not (self.process and self.process.alive):
            self.close()
            self.spawned += 1
            work = self.work / f"p{self.spawned}"
            try:
                self.process = self.client.spawn(self.folders[key], work, self.log_fd)
            except SandboxFailure as exc:
                raise NotGraded(
                    f"not graded: the grader could not start the process for your code "
                    f"({exc}); this is the grader's problem, not yours"
                ) from None
            self.key = key
            module = self.modules[chapter]
            request = {"op": "import", "chapter": chapter, "module": module}
            try:
                reply = self.process.ask(request, Budget(self.import_timeout, self.process.student))
            except Gone as gone:
                self.process = None
                if gone.tampered:
                    err = StudentCrashed("Tampering", tampering_message(gone))
                elif gone.timed_out:
                    err = StudentTimeout(
                        "ImportTimeout",
                        f"importing {chapter}/{module}.py did not finish within "
                        f"{self.import_timeout:g} s: code at module level loops or computes too "
                        "long (put it inside a function)",
                    )
                else:
                    how = (
                        "it closed the pipes the tests talk to it through"
                        if gone.lingered
                        else how_it_ended(gone.code)
                    )
                    err = StudentCrashed(
                        "ImportCrash",
                        f"importing {chapter}/{module}.py ended its process: {how}; "
                        "module-level code must not exit or crash",
                    )
                self.broken[chapter] = err
                raise err from None
            if not reply.get("ok"):
                info = reply.get("error") or {}
                if str(info.get("type", "")).endswith("TargetImportError"):
                    err = TargetImportError(str(info.get("message", ""))[:600])
                else:
                    err = rebuilt_error(
                        info.get("type", "?"), info.get("base"), info.get("message", "")
                    )
                self.broken[chapter] = err
                self.close()
                raise err
        return self.process

    def inside(self):
        raise RuntimeError("course bug: nothing runs inside a probe on the trusted side")

    def call(self, p, args: tuple, kwargs: dict):
        from harness.calls import probe_reach
        from harness.probe import plain_arguments
        from harness.target import REPO

        args, kwargs = plain_arguments(f"probe {p.name}", args, kwargs)
        file = p.file.relative_to(REPO).as_posix()
        request = {
            "op": "call",
            "file": file,
            "name": p.name,
            "args": tuple(args),
            "kwargs": dict(kwargs),
        }
        return self._ask(request, probe_reach(p.fn, args, kwargs), f"{file}::{p.name}")

    def attr(self, chapter: str, module: str, name: str, live):
        """``chapter_module(...).name`` in a test body: a remote call, or a plain copy."""
        if not self.nodeid:
            raise RuntimeError(
                f"course bug: {chapter}/{module}.py's {name} was reached outside a test"
            )
        request = {"op": "attr", "chapter": chapter, "module": module, "name": name}
        answer = self._ask(request, frozenset({name}))
        if isinstance(answer, dict) and answer.get("callable") is True:
            return RemoteCall(self, chapter, module, name)
        return answer.get("value") if isinstance(answer, dict) else None

    def _ask(self, request: dict, reach: frozenset[str] | None = None, probe: str = ""):
        """One request to the student's process of this test's chapter and phase.
        ``reach``: the module's names the request may call (None: unknown), ``probe``:
        the probe it runs, if any."""
        from harness.probe import StudentCrashed, StudentTimeout, rebuilt_error

        chapter, phase = self._key()
        if chapter in self.broken:  # the same error for each call, with this call's frames
            raise self.broken[chapter].with_traceback(None) from None
        earlier = self.hangs.refusal(chapter, reach, probe, hidden_now=phase == "hidden")
        if earlier:
            raise StudentTimeout("HungEarlier", earlier)
        process = self._start(chapter, phase)
        budget = Budget(self.limit - self.spent, process.student)
        dump: list[str] = []
        since = self._log_size()
        process.on_timeout = lambda p: dump.append(stack_dump(p.student, self.log_path, since))
        try:
            reply = process.ask(request, budget)
        except Gone as gone:
            self.process = None
            if gone.tampered:
                raise StudentCrashed("Tampering", tampering_message(gone)) from None
            if gone.timed_out:
                raise StudentTimeout(
                    "Timeout", self._hung(chapter, request, reach, probe, "".join(dump))
                ) from None
            what = (
                "closed the pipes the tests talk to it through and kept running, so its "
                "process was stopped"
                if gone.lingered
                else f"ended its process: {how_it_ended(gone.code)}"
            )
            raise StudentCrashed(
                "Crash", f"during this call your code {what}; the next call gets a new process"
            ) from None
        finally:
            self.spent += budget.settle()
            process.on_timeout = None
        if reply.get("ok"):
            return reply.get("value")
        info = reply.get("error") or {}
        raise rebuilt_error(
            info.get("type", "?"), info.get("base"), info.get("message", ""), info.get("where", ())
        )

    def _log_size(self) -> int:
        try:
            return os.fstat(self.log_fd).st_size
        except OSError:
            return 0

    def _hung(self, chapter: str, request: dict, reach, probe: str, dump: str) -> str:
        """Note which function hung, and say so (at most ``MESSAGE_LIMIT`` characters)."""
        from harness import calls

        module = self.modules[chapter]
        source = self.sources.get((chapter, module), "")
        seen = calls.entry_in_dump(calls.last_dump(dump), source, chapter, module)
        exact = request.get("name") if request.get("op") != "call" else None
        function = exact or (seen[0] if seen else None)
        where = seen[1] if seen and (exact is None or seen[0] == exact) else ""
        self.hangs.note(chapter, self.nodeid, function, probe, where)
        what = f"{function}" if function else f"probe {request.get('name')}"
        at = f" (stopped at {where})" if where else ""
        return (
            f"{what} did not return within the test's {self.limit:g} s{at}: an endless loop, "
            "a wait that never ends, or a very slow call (waiting for a busy machine does not "
            f"count); its process was replaced, and later tests that call {what} fail at once"
        )


DUMP_WAIT_S = 2.0  # wall seconds a hung process gets to write where it was
DUMP_READ_BYTES = 1 << 18


def stack_dump(pid: int, log: Path, since: int) -> str:
    """Ask a hung student process where it is (SIGUSR1: ``faulthandler`` writes every
    thread's stack to its log) and return what it wrote to the log since ``since``.
    Student-side text: it may lie, so it only ever costs that student's own tests."""
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return ""
    deadline = time.monotonic() + DUMP_WAIT_S
    size, settled = -1, time.monotonic()
    while time.monotonic() < deadline:
        try:
            now = log.stat().st_size
        except OSError:
            return ""
        if now != size:
            size, settled = now, time.monotonic()
        elif size > since and time.monotonic() - settled >= 0.1:
            break
        time.sleep(0.02)
    if size <= since:
        return ""
    try:
        with open(log, "rb") as f:
            f.seek(max(since, size - DUMP_READ_BYTES))
            return f.read(DUMP_READ_BYTES).decode(errors="replace")
    except OSError:
        return ""


class RemoteCall:
    """A student's function or class, called from a test body with plain data."""

    def __init__(self, transport: SplitTransport, chapter: str, module: str, name: str) -> None:
        self._t, self._where = transport, (chapter, module, name)

    def __call__(self, *args, **kwargs):
        from harness.probe import plain_arguments

        chapter, module, name = self._where
        args, kwargs = plain_arguments(f"{module}.{name}", args, kwargs)
        request = {
            "op": "attr_call",
            "chapter": chapter,
            "module": module,
            "name": name,
            "args": tuple(args),
            "kwargs": dict(kwargs),
        }
        return self._t._ask(request, frozenset({name}))

    def __getattr__(self, attr: str):
        raise AttributeError(
            f"{self._where[1]}.{self._where[2]}.{attr}: a test body only calls the student's "
            "functions with plain data; reach deeper (methods, live objects) inside a @probe"
        )


# ---- pytest plugins ----------------------------------------------------------------------


def _statement(item) -> str:
    """The property a test checks, in its own words: its docstring's first paragraph,
    else its name read as a sentence."""
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip()
    if doc:
        return " ".join(doc.split("\n\n")[0].split())
    return item.name.removeprefix("test_").replace("_", " ")


class Reporter:
    """Keep only the wanted tests and report each one, in JSON lines, when it finishes."""

    def __init__(self, fd: int, wanted: list[str] | None) -> None:
        self.fd = fd
        self.wanted = None if wanted is None else set(wanted)
        self.phases: dict[str, list] = {}
        self.statements: dict[str, str] = {}
        self.limits: dict[str, float] = {}  # tests with a time limit of their own

    def send(self, **event) -> None:
        data = (json.dumps(event) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data) :]

    def pytest_configure(self, config) -> None:
        config.addinivalue_line("markers", "timeout(seconds): the test's time limit")

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        if self.wanted is not None:
            keep = [item for item in items if item.nodeid in self.wanted]
            dropped = [item for item in items if item.nodeid not in self.wanted]
            items[:] = keep
            if dropped:
                config.hook.pytest_deselected(items=dropped)
        for item in items:
            self.statements[item.nodeid] = _statement(item)
            marker = item.get_closest_marker("timeout")
            if marker and marker.args:
                self.limits[item.nodeid] = float(marker.args[0])

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            text = report.longreprtext.strip().splitlines()
            self.send(ev="collect_error", nodeid=report.nodeid, message="\n".join(text[-3:]))

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.phases[nodeid] = []
        self.send(ev="start", nodeid=nodeid, limit=self.limits.get(nodeid))

    def pytest_runtest_logreport(self, report) -> None:
        self.phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        outcome, message, category, duration = "passed", "", "", 0.0
        for report in self.phases.pop(nodeid, []):
            duration += report.duration
            props = dict(report.user_properties)
            if report.failed and outcome in ("passed", "skipped"):
                outcome = "failed" if report.when == "call" else "error"
                message = str(props.get("detail") or props.get("message") or report.longreprtext)
                category = str(props.get("category", "error"))
                if category == "not_graded":  # the grader's failure: no verdict at all
                    outcome = "not_graded"
            elif report.skipped and outcome == "passed":
                outcome, category = "skipped", "skipped"
                message = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
        self.send(
            ev="result",
            nodeid=nodeid,
            outcome=outcome,
            message=message[:4000],
            category=category,
            statement=self.statements.get(nodeid, ""),
            duration=duration,
        )

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.send(ev="done", exitstatus=int(exitstatus))


class Lister:
    """The trusted collect-only run: the tests and their markers."""

    def __init__(self) -> None:
        self.tests: list[dict] = []
        self.errors: list[str] = []

    def pytest_configure(self, config) -> None:
        config.addinivalue_line("markers", "timeout(seconds): the test's time limit")

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            task = item.get_closest_marker("task")
            points = item.get_closest_marker("points")
            self.tests.append(
                {
                    "nodeid": item.nodeid,
                    "name": item.name,
                    "task": str(task.args[0]) if task else None,
                    "points": int(points.args[0]) if points else 1,
                    "cuda": item.get_closest_marker("cuda") is not None,
                    "statement": _statement(item),
                }
            )


def pytest_args(config: dict) -> list[str]:
    return [
        *config["test_files"],
        "--noconftest",
        "-p",
        "harness.plugin",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:stepwise",
        "-c",
        config["ini"],
        "--rootdir",
        config["rootdir"],
        "--import-mode=importlib",
        "-q",
        "--tb=native",  # messages come from the harness; pytest's own long form is costly
    ]


# ---- main ----------------------------------------------------------------------------------


def main(argv: list[str], results_fd: int | None = None, parent_pid: int | None = None) -> int:
    """Run the tests ``argv[0]`` (a config file) names. Started on its own, the grader
    is its parent and the config names the results pipe; forked by ``grader.warm``, that
    process is the parent and hands over the pipe as ``results_fd``."""
    with open(argv[0]) as f:
        config = json.load(f)
    if results_fd is not None:
        config["fd"] = results_fd
    sys.path.insert(0, config["rootdir"])
    import pytest

    if "--collect" in argv:
        lister = Lister()
        code = pytest.main([*pytest_args(config), "--collect-only"], plugins=[lister])
        with open(config["collect_out"], "w") as f:
            json.dump({"tests": lister.tests, "errors": lister.errors, "exit": int(code)}, f)
        return 0

    from grader.isolation import spawner

    # the grader (or the warm parent) may already have died
    spawner.die_with_parent(parent_pid or config.get("grader_pid"))
    # A bound on this process too: no reply, and nothing a test builds from one, may take
    # the machine's memory (the soft limit only: student processes set their own).
    import resource  # Linux's: the split run is (grader.inprocess runs elsewhere)

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = int(config.get("trusted_memory_mb", 8192)) << 20
    if hard == resource.RLIM_INFINITY or limit < hard:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    import importlib

    import torch

    torch.set_num_threads(int(config.get("threads", 1)))
    for name in config.get("preload", []):  # paid once here, not in every student process
        importlib.import_module(name)
    # the spawner's children need them (the probe files import judge and evidence)
    from harness import beside, evidence, judge, probe, target, wire  # noqa: F401

    judge.warm_up()  # one-time costs paid once here, not again in every student process
    probe.warm_up()

    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    results_fd = int(config["fd"])
    trusted = os.getpid()
    pid = os.fork()
    if pid == 0:  # the spawner: forked before any test file is imported
        parent.close()
        os.close(results_fd)
        spawner.run_spawner(child, config["isolation"], trusted)
        os._exit(0)
    child.close()
    target.forbid_loading("the grader's trusted side reaches student code only through probes")
    transport = SplitTransport(SpawnerClient(parent), config)
    probe.use(transport)
    try:
        pytest.main(pytest_args(config), plugins=[Reporter(results_fd, config["tests"])])
    finally:
        transport.close()
        parent.close()  # the spawner sees the end, ends its children and clears their uids
        _wait_for(pid, SPAWNER_CLEANUP_S)  # before this process's end kills it mid-way
    sys.stdout.flush()
    os._exit(0)


SPAWNER_CLEANUP_S = 30.0


def _wait_for(pid: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.01)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
