"""Run one submission's tests once: build its sandbox, start the trusted test process
(``grader.verdict``) under a watchdog, and bring back its per-test events.

The sandbox of a submission holds, per chapter and phase (``ch02-public``,
``ch02-hidden``), exactly what that chapter's student process may see:

    students/ch02-public/impl/ch02/autograd.py           the submitted module
    students/ch02-public/exercises/ch02/test_autograd.py  probes only (harness.strip)
    students/ch02-public/course/data/ch02_*               the chapter's data, if any
    students/ch02-public/harness/*.py                     for worker processes it spawns
    students/ch02-hidden/...                              the same, plus the hidden probes

The public phase never holds a hidden file, so nothing the student's code could read
in a hidden phase can come back in the visible report of a public test. The trusted
process reads the real test files from the repository; it never imports the
submission (see ``grader/verdict.py`` and ``grader/isolation/`` for who runs what).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import isolation, warm
from harness import index, strip
from harness.target import REPO

LOG_TAIL = 4000
VERDICT = Path(__file__).with_name("verdict.py")
# What decides a grade besides the tests (a change regrades): the harness, the sandbox,
# the trusted process, and how outcomes become points.
HARNESS_FILES = (
    "harness/*.py",
    "grader/isolation/*.py",
    "grader/verdict.py",
    "grader/warm.py",
    "grader/sandbox.py",
    "grader/run.py",
    "grader/score.py",
)


@dataclass(frozen=True)
class Limits:
    test_timeout: float = 60.0  # seconds per test (the calls into the student's code)
    grace: float = 15.0  # extra seconds before the watchdog kills a test that overruns
    wall: float = 900.0  # seconds for the whole submission, all restarts included
    memory_mb: int = 4096  # address space of a student process
    trusted_memory_mb: int = 8192  # address space of the trusted test process
    nproc: int = 64  # processes and threads of a student process's uid
    fsize_mb: int = 256  # largest file a student process may write
    tmp_mb: int = 256  # its private /tmp (memory)
    shm_mb: int = 256  # its private /dev/shm (memory; DataLoader workers use it)
    threads: int = 1  # torch / OpenMP threads
    import_timeout: float = 0.0  # seconds to import a student module (0: test_timeout)


@dataclass
class RunResult:
    """What one trusted test process reported before it ended."""

    events: list[dict] = field(default_factory=list)
    started: str | None = None  # the test that was running when the process ended
    finished: bool = False  # the session reached its end
    killed: str | None = None  # why the grader killed it, if it did
    returncode: int | None = None
    log_tail: str = ""
    seconds: float = 0.0


# ---- building the sandbox ---------------------------------------------------------


@contextlib.contextmanager
def parent_dir():
    """A temporary folder for sandboxes: enterable by the sandbox users, never listable,
    so a student process cannot find another submission's sandbox."""
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        os.chmod(tmp, 0o311)
        yield Path(tmp)


def chapter_files(chapter: index.Chapter) -> list[Path]:
    return [p for p in (chapter.public_tests, chapter.hidden_tests) if p.exists()]


def data_files(chapter: index.Chapter) -> list[Path]:
    data = REPO / "course" / "data"
    if not data.is_dir():
        return []
    files = []
    for p in sorted(data.iterdir()):
        if p.name.startswith(f"{chapter.id}_") or p.name == chapter.id:
            files += sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
    return [p for p in files if not p.is_symlink()]


def support_files(chapters: list[index.Chapter]) -> list[Path]:
    """Everything besides the submission that decides the grades (for the journal's key)."""
    files = sorted(p for pattern in HARNESS_FILES for p in REPO.glob(pattern))
    for chapter in chapters:
        files.append(REPO / "course" / f"{chapter.id}.toml")
        files += data_files(chapter) + chapter_files(chapter)
    return [p for p in files if p.is_file() and not p.is_symlink()]


def stripped(tests: dict[str, Path], hidden: bool) -> dict[str, str]:
    """``strip.student_side``, kept on disk per user (beside the grader's other caches)
    by the content of the test files and of the stripper: a check or a grade of the same
    chapters does not parse and compile them again (about half a second of CPU)."""
    h = hashlib.sha256(b"hidden" if hidden else b"public")
    for part in [Path(strip.__file__), *(tests[rel] for rel in sorted(tests))]:
        h.update(str(part.name).encode() + hashlib.sha256(part.read_bytes()).digest())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    cached = base / "pytorch-course-grader" / "stripped" / f"{h.hexdigest()[:40]}.json"
    try:
        found = json.loads(cached.read_text())
        if isinstance(found, dict) and set(found) <= set(tests):
            return found
    except (OSError, ValueError):
        pass
    made = strip.student_side(tests, hidden)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temp = cached.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps(made))
        temp.replace(cached)
    except OSError:
        pass  # no cache, no harm
    return made


def student_harness() -> list[Path]:
    """The harness modules a student process imports from its own folder (its worker
    processes too): all but what only the trusted side uses (Hypothesis's inputs)."""
    return [p for p in sorted((REPO / "harness").glob("*.py")) if p.name != "generated.py"]


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def build(root: Path, chapters: list[index.Chapter], impl_files: dict[str, bytes]) -> Path:
    """A fresh sandbox at ``root`` for one submission (see the module doc)."""
    for chapter in chapters:
        tests = {p.relative_to(REPO).as_posix(): p for p in chapter_files(chapter)}
        for phase in ("public", "hidden"):
            folder = root / "students" / f"{chapter.id}-{phase}"
            folder.mkdir(parents=True)
            for rel, text in stripped(tests, hidden=phase == "hidden").items():
                _write(folder / rel, text.encode())
            for p in data_files(chapter):
                _write(folder / p.relative_to(REPO), p.read_bytes())
            for p in student_harness():
                _write(folder / "harness" / p.name, p.read_bytes())
            rel = f"{chapter.id}/{chapter.module}.py"
            (folder / "impl" / chapter.id).mkdir(parents=True)
            if rel in impl_files:
                _write(folder / "impl" / rel, impl_files[rel])
    for sub in ("run", "work"):
        (root / sub).mkdir()
    (root / "run" / "pytest.ini").write_text("[pytest]\n")
    _lock_down(root)
    return root


def _lock_down(root: Path) -> None:
    """Student folders read-only; each chapter-and-phase folder closed to everyone but the
    grader until a student process is started on it (the spawner then opens it to that
    process's uid alone, so a public phase cannot read the hidden phase's files, nor one
    sandbox another's, even by a path it guessed); ``run/`` only for the grader."""
    for dirpath, _, filenames in os.walk(root / "students"):
        for name in filenames:
            os.chmod(Path(dirpath) / name, 0o444)
        os.chmod(dirpath, 0o555)
    for phase in (root / "students").iterdir():
        os.chmod(phase, 0o700)
    os.chmod(root / "students", 0o711)
    os.chmod(root / "work", 0o711)
    os.chmod(root / "run", 0o700)
    os.chmod(root, 0o711)


def preload(chapters: list[index.Chapter]) -> list[str]:
    """Modules the trusted process imports before forking student processes, so no
    student process pays for them again (the chapters' index says which)."""
    names = ["numpy", "matplotlib", "matplotlib.pyplot"]
    for chapter in chapters:
        names += [n for n in chapter.preload if n not in names]
    return names


def verdict_config(root: Path, chapters: list[index.Chapter], tests, limits: Limits) -> dict:
    return {
        "test_files": [str(p) for c in chapters for p in chapter_files(c)],
        "ini": str(root / "run" / "pytest.ini"),
        "rootdir": str(REPO),
        "tests": tests,
        "test_timeout": limits.test_timeout,
        "import_timeout": limits.import_timeout or limits.test_timeout,
        "threads": limits.threads,
        "trusted_memory_mb": max(limits.trusted_memory_mb, limits.memory_mb + 1024),
        "preload": preload(chapters),
        "students": {
            f"{c.id}-{phase}": str(root / "students" / f"{c.id}-{phase}")
            for c in chapters
            for phase in ("public", "hidden")
        },
        "modules": {c.id: c.module for c in chapters},
        "log": str(root / "run" / "student.log"),
        "work": str(root / "work"),
        "isolation": isolation_settings(limits),
    }


def isolation_settings(limits: Limits) -> dict:
    """What the spawner declares a student process's sandbox from: the mode and limits."""
    fields = isolation.ProcessLimits.__dataclass_fields__
    return {"mode": isolation.mode()} | {k: v for k, v in vars(limits).items() if k in fields}


def trusted_env(threads: int) -> dict:
    env = {
        key: os.environ[key]
        for key in (
            "PATH",
            "HOME",
            "LANG",
            "CUDA_VISIBLE_DEVICES",
            "XDG_CACHE_HOME",
            *isolation.SETTINGS_ENV,
        )
        if key in os.environ
    }
    return env | {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
    }


# ---- running it ---------------------------------------------------------------------


def watchdog(test_limit: float, limits: Limits) -> float:
    """Wall seconds after which a test that has not finished means the trusted process is
    stuck: beyond anything the test's calls into student code may take (their own time
    limit, or their wall-clock backstop on a busy machine), so never the student's doing."""
    from grader.verdict import backstop

    return 2 * backstop(test_limit) + limits.grace


def _reader(fd: int, lines: list, done: threading.Event) -> None:
    with os.fdopen(fd, "rb") as f:
        for raw in f:
            lines.append((time.monotonic(), raw))
    done.set()


def _parse(raw: bytes) -> dict | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


# thread -> (the test its run is in, since when): read by grade's progress lines
RUNNING: dict[int, tuple[str, float]] = {}


def run_once(
    root: Path,
    chapters: list[index.Chapter],
    tests: list[str] | None,
    limits: Limits,
    deadline: float,
) -> RunResult:
    """Run ``tests`` (None: all in the files) in the sandbox at ``root`` once."""
    config = verdict_config(root, chapters, tests, limits)
    read_fd, write_fd = os.pipe()
    config["fd"] = write_fd
    config["grader_pid"] = os.getpid()
    (root / "run" / "config.json").write_text(json.dumps(config))
    result = RunResult()
    started_at = time.monotonic()
    log = tempfile.TemporaryFile()
    argv = [str(root / "run" / "config.json")]
    try:
        # forked from a warm parent (no import paid per submission), or started fresh
        env = trusted_env(limits.threads)
        proc = warm.start(argv, write_fd, log.fileno(), env, config["preload"])
    finally:
        os.close(write_fd)
    lines: list = []
    eof = threading.Event()
    threading.Thread(target=_reader, args=(read_fd, lines, eof), daemon=True).start()
    seen, test_started, test_limit = 0, started_at, limits.test_timeout
    me = threading.get_ident()
    while True:
        try:
            proc.wait(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
        while seen < len(lines):
            at, raw = lines[seen]
            seen += 1
            event = _parse(raw) or {}
            if event.get("ev") == "start":
                result.started, test_started = event.get("nodeid"), at
                own = event.get("limit")
                test_limit = float(own) if isinstance(own, int | float) else limits.test_timeout
                RUNNING[me] = (result.started, test_started)
            elif event.get("ev") == "result":
                result.started = None
                RUNNING.pop(me, None)
        now = time.monotonic()
        if now > deadline:
            result.killed = "wall"
        elif result.started and now - test_started > watchdog(test_limit, limits):
            result.killed = "test_timeout"
        if result.killed:
            warm.kill_group(proc)
            proc.kill()
            proc.wait()
            break
    RUNNING.pop(me, None)
    result.returncode = proc.returncode
    warm.kill_group(proc)
    eof.wait(timeout=5)
    result.seconds = time.monotonic() - started_at
    result.started = None
    for _, raw in lines:
        event = _parse(raw)
        if event is None:
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
    """Delete a sandbox, whatever was left in it."""
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
