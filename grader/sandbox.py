"""Run one submission's tests in a fresh directory, in a process that is not the
grader's, under limits, and bring back the signed per-test events.

What is defended, and how:

- Only ``impl/chNN/<module>.py`` comes from the submission (see ``collect``); the tests,
  ``harness/`` and ``course/`` are fresh copies; pytest runs with ``--noconftest``,
  plugin autoload off, ``-c`` pointing at our own empty ini, and no cache.
- As root, the worker runs as an unprivileged uid of its own (one per concurrent job,
  held with a lock file) inside new mount and PID namespaces (``unshare``): it cannot
  write the sandbox, the journal or the outputs, cannot see the grader's processes, and
  every process it starts dies with it. ``RLIMIT_NPROC`` bounds forks; ``RLIMIT_AS``
  bounds memory; ``RLIMIT_FSIZE`` bounds file size.
- Without root (or without ``unshare``/``setpriv``) it falls back to the same user in a
  new session: the sandbox is made read-only, the process group is killed at the end,
  but a determined submission can then write anything this user can (say so in CI).
- Results travel on an inherited pipe as lines signed with a secret the worker reads
  from stdin before any submission code runs; stdout and stderr are only a capped log.
  The parent scores only the tests it collected itself (``score``), so forged lines on
  stdout or files in the sandbox count for nothing.
- Timeouts: pytest-timeout's ``signal`` method fails a hung test; a test that defeats it
  is killed by the parent's watchdog (per-test limit + grace) and the run resumes with
  the remaining tests; a wall-clock limit bounds the whole submission.

Not defended: code inside the pytest process can, with enough effort, read the secret
from memory, patch pytest's reporting and forge its own results; it can also use CPU
time up to the limits and read files other users may read. Grading is evidence of
behaviour under honest effort, not proof against a determined attacker.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import index
from harness.target import REPO

WORKER = Path(__file__).with_name("worker.py")
UID_BASE, UID_COUNT = 61000, 1000
LOCK_DIR = Path(tempfile.gettempdir()) / "grader-uids"
LOG_TAIL = 4000


@dataclass(frozen=True)
class Limits:
    test_timeout: float = 60.0  # seconds per test (pytest-timeout, signal method)
    grace: float = 15.0  # extra seconds before the parent kills a test that ignores it
    wall: float = 900.0  # seconds for the whole submission, all restarts included
    memory_mb: int = 4096  # RLIMIT_AS of the worker
    nproc: int = 64  # processes and threads of the worker's uid
    fsize_mb: int = 256  # largest file the worker may write
    threads: int = 1  # torch / OpenMP threads


@dataclass
class RunResult:
    """What one worker process reported before it ended."""

    events: list[dict] = field(default_factory=list)
    forged: int = 0  # lines that did not verify
    started: str | None = None  # the test that was running when the process ended
    finished: bool = False  # the session reached its end
    killed: str | None = None  # why the parent killed it, if it did
    returncode: int | None = None
    log_tail: str = ""
    seconds: float = 0.0


# ---- building the sandbox ---------------------------------------------------------


@contextlib.contextmanager
def parent_dir():
    """A temporary folder for sandboxes: enterable by the sandbox users, never listable,
    so a submission cannot find another one's sandbox."""
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        os.chmod(tmp, 0o311)
        yield Path(tmp)


def chapter_files(chapter: index.Chapter) -> list[Path]:
    return [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]


def support_files(chapters: list[index.Chapter]) -> list[Path]:
    """Everything besides the submission the chosen chapters' tests need, as paths in
    REPO: the harness, their index files, their data (``course/data/chNN_*``), their tests."""
    files = sorted((REPO / "harness").glob("*.py"))
    data = REPO / "course" / "data"
    for chapter in chapters:
        files.append(REPO / "course" / f"{chapter.id}.toml")
        if data.is_dir():
            mine = [
                p
                for p in data.iterdir()
                if p.name.startswith(f"{chapter.id}_") or p.name == chapter.id
            ]
            for p in sorted(mine):
                files += sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        files += chapter_files(chapter)
    return [p for p in files if p.is_file() and not p.is_symlink()]


def build(root: Path, chapters: list[index.Chapter], impl_files: dict[str, bytes]) -> Path:
    """A fresh sandbox at ``root``: our files plus ``impl/<relpath>`` from the submission."""
    for path in support_files(chapters):
        dest = root / path.relative_to(REPO)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    shutil.copyfile(WORKER, root / "worker.py")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "impl").mkdir()
    for rel, data in impl_files.items():
        dest = root / "impl" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    for sub in ("work", "run"):
        (root / sub).mkdir()
    return root


def worker_config(root: Path, chapters: list[index.Chapter], tests: list[str], limits: Limits):
    return {
        "test_files": [str(root / p.relative_to(REPO)) for c in chapters for p in chapter_files(c)],
        "ini": str(root / "pytest.ini"),
        "rootdir": str(root),
        "impl": str(root / "impl"),
        "tests": tests,
        "test_timeout": limits.test_timeout,
        "threads": limits.threads,
        "memory_bytes": limits.memory_mb << 20,
        "fsize_bytes": limits.fsize_mb << 20,
        "nofile": 1024,
    }


# ---- who runs it -------------------------------------------------------------------


@functools.cache
def isolation() -> str:
    """``namespace`` (root with unshare/setpriv) or ``session`` (same user, new session);
    ``GRADER_ISOLATION=session`` forces the weaker one (to test it)."""
    if (
        os.environ.get("GRADER_ISOLATION") == "session"
        or os.geteuid() != 0
        or not (shutil.which("unshare") and shutil.which("setpriv"))
    ):
        return "session"
    probe = subprocess.run(
        ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc", "true"],
        capture_output=True,
        timeout=30,
    )
    if probe.returncode == 0:
        return "namespace"
    print(
        "warning: running as root without namespaces (unshare failed): submissions run as "
        "root, and nothing bounds their processes or the files they touch",
        file=sys.stderr,
    )
    return "session"


class UidSlot:
    """An unprivileged uid held exclusively (across processes) through a lock file."""

    def __init__(self) -> None:
        LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        for uid in range(UID_BASE, UID_BASE + UID_COUNT):
            fd = os.open(LOCK_DIR / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise RuntimeError("no free sandbox uid")

    def release(self) -> None:
        os.close(self._fd)


def _hidden_ancestor(path: Path) -> Path | None:
    """The highest ancestor of ``path`` that other users cannot traverse, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def _namespace_prefix(uid: int, stage: Path) -> list[str]:
    """Command prefix: new mount+PID namespaces, the interpreter made reachable, setpriv."""
    script = ["set -e"]
    hidden = {_hidden_ancestor(Path(p).resolve()) for p in (sys.base_prefix, sys.prefix)}
    hidden |= {_hidden_ancestor(Path(sys.executable).resolve())}
    for n, top in enumerate(sorted(h for h in hidden if h)):
        # Keep the one child on the interpreter's path, hide the rest of ``top``.
        keep = {
            Path(p).resolve().relative_to(top).parts[0]
            for p in (sys.base_prefix, sys.prefix, sys.executable)
            if Path(p).resolve().is_relative_to(top)
        }
        for m, name in enumerate(sorted(keep)):
            script.append(f"mkdir -p {stage}/{n}-{m} && mount --bind {top / name} {stage}/{n}-{m}")
        script.append(f"mount -t tmpfs -o mode=0755,size=1m tmpfs {top}")
        for m, name in enumerate(sorted(keep)):
            script.append(f"mkdir {top / name} && mount --move {stage}/{n}-{m} {top / name}")
    script.append(f'exec setpriv --reuid={uid} --regid={uid} --clear-groups --no-new-privs "$@"')
    return [
        "unshare",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--propagation",
        "private",
        "sh",
        "-c",
        "\n".join(script),
        "sh",
    ]


def _lock_down(root: Path, owner_uid: int | None) -> None:
    """The sandbox is read-only to the worker; ``work/`` is its only writable place."""
    work = root / "work"
    for dirpath, _, filenames in os.walk(root):
        d = Path(dirpath)
        if d == work or work in d.parents:
            continue
        for name in filenames:
            os.chmod(d / name, 0o444)
        os.chmod(d, 0o555)
    if owner_uid is not None:
        os.chown(work, owner_uid, owner_uid)
        os.chmod(work, 0o700)


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


# ---- running it ---------------------------------------------------------------------


def _reader(fd: int, lines: list, done: threading.Event) -> None:
    with os.fdopen(fd, "rb") as f:
        for raw in f:
            lines.append((time.monotonic(), raw))
    done.set()


def _verify(raw: bytes, key: bytes) -> dict | None:
    try:
        outer = json.loads(raw)
        body, mac = outer["body"], outer["mac"]
        good = hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
        return json.loads(body) if hmac.compare_digest(good, mac) else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_once(
    root: Path, chapters: list[index.Chapter], tests: list[str], limits: Limits, deadline: float
) -> RunResult:
    """Run ``tests`` in the sandbox at ``root`` once; return what came back."""
    mode = isolation()
    slot = UidSlot() if mode == "namespace" else None
    config = worker_config(root, chapters, tests, limits)
    config["nproc"] = limits.nproc if slot else _session_nproc(limits.nproc)
    read_fd, write_fd = os.pipe()
    config["fd"] = write_fd
    (root / "run" / "config.json").write_text(json.dumps(config))
    _lock_down(root, slot.uid if slot else None)
    key = secrets.token_hex(32).encode()
    work = root / "work"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "TMPDIR": str(work),
        "MPLCONFIGDIR": str(work),
        "MPLBACKEND": "Agg",
        "USER": "student",
        "LOGNAME": "student",
        "LANG": "C.UTF-8",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(limits.threads),
        "MKL_NUM_THREADS": str(limits.threads),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    }
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        env.pop("CUDA_VISIBLE_DEVICES")
    cmd = [sys.executable, "-E", "-s", str(root / "worker.py"), str(root / "run" / "config.json")]
    if slot:
        stage = root / "stage"
        stage.mkdir()
        cmd = _namespace_prefix(slot.uid, stage) + cmd
    log = tempfile.TemporaryFile()
    result = RunResult()
    started_at = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=work,
            env=env,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    finally:
        os.close(write_fd)
    lines: list = []
    eof = threading.Event()
    threading.Thread(target=_reader, args=(read_fd, lines, eof), daemon=True).start()
    try:
        proc.stdin.write(key + b"\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass
    seen, test_started = 0, started_at
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        while seen < len(lines):
            at, raw = lines[seen]
            seen += 1
            event = _verify(raw, key)
            if event and event.get("ev") == "start":
                result.started, test_started = event.get("nodeid"), at
            elif event and event.get("ev") == "result":
                result.started = None
        now = time.monotonic()
        if now > deadline:
            result.killed = "wall"
        elif result.started and now - test_started > limits.test_timeout + limits.grace:
            result.killed = "test_timeout"
        if result.killed:
            _kill_group(proc)
            proc.kill()
            proc.wait()
            break
    result.returncode = proc.returncode
    _kill_group(proc)
    eof.wait(timeout=5)  # a stray holder of the pipe cannot outlive the namespace
    if slot:
        slot.release()
    result.seconds = time.monotonic() - started_at
    result.started = None
    for _, raw in lines:
        event = _verify(raw, key)
        if event is None:
            result.forged += 1
            continue
        result.events.append(event)
        if event.get("ev") == "start":
            result.started = event.get("nodeid")
        elif event.get("ev") == "result":
            result.started = None
        elif event.get("ev") == "done":
            result.finished = True
    log.seek(0, os.SEEK_END)
    size = log.tell()
    log.seek(max(0, size - LOG_TAIL))
    result.log_tail = log.read().decode(errors="replace")
    log.close()
    return result


def remove(root: Path) -> None:
    """Delete a sandbox, whatever the worker left in it."""
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            try:
                os.chmod(Path(dirpath) / name, 0o700)
            except OSError:
                pass
    try:
        os.chmod(root, 0o700)
    except OSError:
        pass
    shutil.rmtree(root, ignore_errors=True)
