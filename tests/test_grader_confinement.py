"""What a submission's code can reach from its sandbox, in every way an instructor runs
the grader: as root (namespaces), as a normal user (a user namespace), as root where
namespaces are refused (a container: a uid of its own under Landlock), and as a normal
user without user namespaces (Landlock alone, graded only with --no-confinement).

One *prober* submission tries every row of the matrix from inside its sandbox — read the
reference solutions and the hidden tests at their known paths and through ``sys.path``,
a classmate's submission, the run's outputs, the grader's home; write beside a
classmate's module, into the outputs, the home and every folder any user may write on
this machine; reach the network and a Unix socket by its path; signal a process outside
its sandbox — and answers ``gradient_at`` correctly only if every try failed, otherwise
with a bit mask of what worked. Afterwards the test checks the disk itself: nothing
written anywhere, the classmate's file unchanged. grader/README.md's isolation table
states each column; a row this file does not hold is not in that table as defended.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader import isolation
from harness.target import REPO
from tests.grader_data import channel_students as channels
from tests.grader_data.helpers import (
    CH00_MAX,
    SOLUTION,
    STUB,
    readable_python_prefix,
    write_submission,
)

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the columns are made from root (setpriv)"),
]
NORMAL_USER = 60990  # a uid outside every sandbox range, with no entry in /etc/passwd
ROWS = (
    "read_solution", "read_hidden", "read_submissions", "read_outputs", "read_home",
    "solution_via_sys_path", "write_outside", "write_classmate", "write_home", "write_outputs",
    "tcp", "udp", "unix_socket_by_path", "signal_outside", "read_hidden_phase",
    "see_other_processes",
)  # fmt: skip
TOKEN = secrets.token_hex(4)
MARKER = f"course-confinement-{TOKEN}"


def world_writable() -> list[str]:
    """Every folder any user may write, down to three levels (not /proc or /sys)."""
    found = []
    for top in ("/tmp", "/var", "/run", "/dev", "/srv", "/opt", "/home", "/mnt"):
        for dirpath, dirnames, _ in os.walk(top):
            depth = len(Path(dirpath).parts)
            with contextlib.suppress(OSError):
                if os.stat(dirpath).st_mode & 0o002 and not os.path.islink(dirpath):
                    found.append(dirpath)
            if depth >= 4 or dirpath.startswith(("/proc", "/sys")):
                dirnames[:] = []
    return sorted(set(found))[:60]


PROBER = """
import os as _o, socket as _s, sys as _sys
from pathlib import Path as _P

_WHERE = {where!r}


def _ok(fn):
    try:
        fn()
        return True
    except Exception:
        return False


def _read(path):
    with open(path, "rb") as f:
        f.read(1)


def _write(path):
    with open(path, "a") as f:
        f.write("x")


def _via_sys_path():
    for entry in _sys.path:
        for folder in [_P(entry or "."), *_P(entry or ".").resolve().parents]:
            if _ok(lambda: _read(folder / "solutions/ch00/training_loop.py")):
                return
    raise OSError("not found")


def _write_outside():
    if not any([_ok(lambda: _write(d + "/" + _WHERE["marker"])) for d in _WHERE["writable"]]):
        raise OSError("nowhere")


def _tcp():
    with _s.create_connection(("127.0.0.1", _WHERE["port"]), timeout=2):
        pass


def _udp():
    with _s.socket(_s.AF_INET, _s.SOCK_DGRAM) as u:
        u.sendto(b"x", ("127.0.0.1", _WHERE["port"]))


def _unix():
    with _s.socket(_s.AF_UNIX, _s.SOCK_STREAM) as u:
        u.settimeout(2)
        u.connect(_WHERE["unix"])


def _signal_outside():
    parent = _o.getppid()
    if parent <= 1:
        raise OSError("no parent in view")
    _o.kill(parent, 0)


def _hidden_phase():
    mine = _P(__file__).resolve().parents[2]  # its chapter folder: .../ch00-public, or /sandbox
    _read(mine.parent / "ch00-hidden/grader/hidden/ch00/test_training_loop_hidden.py")


def _other_processes():
    mine = {{_o.getpid()}}
    for stat in _P("/proc").glob("[0-9]*/stat"):
        try:
            pid, ppid = int(stat.parent.name), int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if pid not in mine and ppid not in mine:
            return  # a process that is neither it nor a child of it: the grader's, say
    raise OSError("none seen")


def _tries():
    w = _WHERE
    return {{
        "read_solution": lambda: _read(w["repo"] + "/solutions/ch00/training_loop.py"),
        "read_hidden": lambda: _read(w["repo"] + "/grader/hidden/ch00/test_training_loop_hidden.py"),
        "read_submissions": lambda: _read(w["classmate"]),
        "read_outputs": lambda: _read(w["out"] + "/earlier-output.txt"),
        "read_home": lambda: _read(w["home"] + "/private.txt"),
        "solution_via_sys_path": _via_sys_path,
        "write_outside": _write_outside,
        "write_classmate": lambda: _write(w["classmate"]),
        "write_home": lambda: _write(w["home"] + "/" + w["marker"]),
        "write_outputs": lambda: _write(w["out"] + "/" + w["marker"]),
        "tcp": _tcp,
        "udp": _udp,
        "unix_socket_by_path": _unix,
        "signal_outside": _signal_outside,
        "read_hidden_phase": _hidden_phase,
        "see_other_processes": _other_processes,
    }}


def gradient_at(w, x, target):
    mask = sum(1 << bit for bit, fn in enumerate(_tries().values()) if _ok(fn))
    return -16.0 if not mask else float(mask)
"""


# The attack the instructors' reports describe, whole: run the reference in place of its
# own code (found at its known path or through sys.path), leave a note in the grader's
# folder, and sink a classmate's next regrade. It deserves 0 and must change nothing.
COPIER = """
import os as _o, sys as _sys
from pathlib import Path as _P

_WHERE = {where!r}
_candidates = [_P(_WHERE["repo"]) / "solutions/ch00/training_loop.py"]
for _entry in _sys.path:
    for _folder in [_P(_entry or "."), *_P(_entry or ".").resolve().parents]:
        _candidates.append(_folder / "solutions/ch00/training_loop.py")
for _path in _candidates:
    try:
        exec(compile(_path.read_text(), str(_path), "exec"), globals())
        break
    except Exception:
        pass
for _path, _text in ((_WHERE["home"] + "/copied.txt", "found it"),
                     (_WHERE["classmate"], "\nraise SystemExit\n")):
    try:
        with open(_path, "a") as _f:
            _f.write(_text)
    except Exception:
        pass
"""


class Column:
    """One way of running the grader: its command prefix, environment and files."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.base = Path(tempfile.mkdtemp(prefix=f"confinement-{name}-", dir="/tmp"))
        self.base.chmod(0o711)  # enterable (a uid sandbox's folder lies under TMPDIR)
        self.home, self.subs, self.out = self.base / "home", self.base / "subs", self.base / "out"
        user = name in ("normal-user", "landlock")
        owner = NORMAL_USER if user else 0
        for folder in (self.home, self.subs, self.out, self.base / "tmp"):
            folder.mkdir()
            folder.chmod(0o711 if folder.name == "tmp" else 0o700)  # TMPDIR: enterable
            os.chown(folder, owner, owner)
        (self.home / "private.txt").write_text("the grader's own notes")
        (self.out / "earlier-output.txt").write_text("a grade from an earlier run")
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "GRADER_UID_BASE")}
        self.env = env | {
            "HOME": str(self.home),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "TMPDIR": str(self.base / "tmp"),
        }
        self.prefix: list[str] = []
        self.flags: list[str] = []
        if name == "container":
            self.env["GRADER_ISOLATION"] = "uid"
        if name == "landlock":
            self.env["GRADER_ISOLATION"] = "landlock"
            self.flags = ["--no-confinement"]
        if name in ("container", "normal-user", "landlock"):
            self.prefix = readable_python_prefix()
        if user:
            self.env |= {"USER": "learner", "LOGNAME": "learner"}
            self.prefix += [
                "setpriv", f"--reuid={NORMAL_USER}", f"--regid={NORMAL_USER}", "--clear-groups",
            ]  # fmt: skip
        self.owner = owner

    def chown_tree(self, folder: Path) -> None:
        for dirpath, _, files in os.walk(folder):
            os.chown(dirpath, self.owner, self.owner)
            for name in files:
                os.chown(Path(dirpath) / name, self.owner, self.owner)

    def cleanup(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


@contextlib.contextmanager
def listeners():
    """A TCP and a UDP socket on one loopback port, and a Unix socket anyone may connect
    to at a path (in a folder anyone may enter)."""
    tcp = socket.create_server(("127.0.0.1", 0))
    port = tcp.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    unix_dir = Path(tempfile.mkdtemp(prefix="confinement-sock-", dir="/tmp"))
    unix_dir.chmod(0o755)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(unix_dir / "sock"))
    os.chmod(unix_dir / "sock", 0o777)
    unix.listen(8)
    try:
        yield port, str(unix_dir / "sock")
    finally:
        for s in (tcp, udp, unix):
            s.close()
        shutil.rmtree(unix_dir, ignore_errors=True)


def allowed_here(column: str) -> set[str]:
    """What the README says a column leaves open on this kernel."""
    abi = isolation.landlock_abi()
    if column in ("container", "landlock") and abi < 9:
        return {"unix_socket_by_path"}  # Landlock confines Unix sockets by path from ABI 9
    return set()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


COLUMNS = ["root", "normal-user", "container", "landlock"]


class Graded:
    """One column's run: the prober, the copier, the channel students, the reference."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.col = col = Column(column)
        everywhere = [d for d in world_writable() if not d.startswith(str(col.base))]
        writable = everywhere
        if column in ("root", "normal-user"):  # its /tmp and /dev/shm are its own, in memory
            writable = [d for d in writable if not d.startswith(("/tmp", "/dev/shm"))]
        if column in ("container", "landlock"):  # multiprocessing's semaphores live there:
            # its own files, never readable by another uid (container), or the README's gap
            writable = [d for d in writable if not d.startswith("/dev/shm")]
            everywhere = [d for d in everywhere if not d.startswith("/dev/shm")]
        self.everywhere = everywhere
        self.classmate = col.subs / "a_classmate" / "ch00" / "training_loop.py"
        with listeners() as (port, unix):
            where = {
                "repo": str(REPO), "classmate": str(self.classmate), "out": str(col.out),
                "home": str(col.home), "writable": writable, "marker": MARKER, "port": port,
                "unix": unix,
            }  # fmt: skip
            students = {
                "a_classmate": SOLUTION,
                "b_prober": STUB + PROBER.format(where=where),
                "c_copier": STUB + COPIER.format(where=where),
                "d_writer": channels.WRITER,  # graded before e_reader (--jobs 1, in order)
                "e_reader": channels.READER,
                "f_self": channels.SELF,
            }
            for name, module in students.items():
                write_submission(col.subs, name, module)
            col.chown_tree(col.subs)
            self.classmate_before = digest(self.classmate)
            self.done = subprocess.run(
                [*col.prefix, sys.executable, "-m", "grader", "grade", str(col.subs),
                 "--out", str(col.out), "--chapters", "ch00", "--jobs", "1", "--no-gradebook",
                 "--test-timeout", "60", *col.flags],
                cwd=REPO, env=col.env, capture_output=True, text=True, timeout=800,
            )  # fmt: skip
        assert self.done.returncode == 0, f"{column}: the grader failed: {self.done.stderr[-3000:]}"
        with open(col.out / "grades.csv") as f:
            self.scores = {row["student"]: row["ch00"] for row in csv.DictReader(f)}

    def test(self, student: str, name: str) -> dict:
        data = json.loads((self.col.out / student / "results.json").read_text())
        return next(t for t in data["tests"] if t["name"].endswith(name))

    def mask(self, student: str, name: str) -> int:
        """0 if ``student``'s test ``name`` passed, else the value its function returned."""
        probe = self.test(student, name)
        if probe["status"] == "passed":
            return 0
        value = channels.returned(probe["output"])
        assert value, f"{self.column}: {student} failed without a mask: {probe['output']}"
        return int(value)

    def cleanup(self) -> None:
        for d in world_writable():
            for name in (MARKER, channels.MARKER):
                with contextlib.suppress(OSError):
                    Path(d, name).unlink()
        self.col.cleanup()


@pytest.fixture(scope="module", params=COLUMNS)
def graded(request):
    if request.param == "root" and isolation.mode() != "namespace":
        pytest.skip("namespaces are refused here: the container column covers root")
    run = Graded(request.param)
    yield run
    run.cleanup()


def test_a_submission_reaches_nothing_outside_its_sandbox(graded):
    mask = graded.mask("b_prober", "test_gradient_at_the_books_point")
    found = {name for bit, name in enumerate(ROWS) if mask >> bit & 1}
    allowed = allowed_here(graded.column)
    print(f"{graded.column} (Landlock ABI {isolation.landlock_abi()}): reached {sorted(found)}")
    assert found <= allowed, (
        f"{graded.column}: a submission reached {sorted(found - allowed)} (grader/README.md "
        f"says this column leaves open only {sorted(allowed) or 'nothing'})"
    )
    col = graded.col
    left = [d for d in graded.everywhere if Path(d, MARKER).exists()]
    left += [str(p) for p in (col.home / MARKER, col.out / MARKER) if p.exists()]
    assert not left, f"{graded.column}: files the prober wrote are on disk: {left}"


def test_a_module_that_runs_the_reference_in_its_place_gets_nothing_and_changes_nothing(graded):
    assert graded.scores["c_copier"] == "0", (
        f"{graded.column}: a module that runs the reference in place of its own code scored "
        f"{graded.scores['c_copier']}: it found the solutions"
    )
    assert digest(graded.classmate) == graded.classmate_before, (
        f"{graded.column}: the classmate's submission was changed on disk"
    )
    assert not (graded.col.home / "copied.txt").exists(), (
        f"{graded.column}: the copier wrote into the grader's home"
    )
    assert int(graded.scores["a_classmate"]) == CH00_MAX, (
        f"{graded.column}: the reference, graded beside them, scored {graded.scores['a_classmate']}"
    )


def shared_between_sandboxes(column: str) -> set[str]:
    """What the README says one sandbox can leave for the next in a column: nothing (in the
    landlock column what it left in the shared /dev/shm is removed when it ends)."""
    return set()


def test_nothing_a_submission_leaves_reaches_the_next_one(graded):
    """The reader, graded after the writer (maybe under the same uid), and the writer's
    own hidden phase find none of the markers it left (grader_data/channel_students.py)."""
    allowed = shared_between_sandboxes(graded.column)
    found = set(channels.found_channels(graded.mask("e_reader", "books_point")))
    assert found <= allowed, (
        f"{graded.column}: a submission graded after the writer found what it left: "
        f"{sorted(found - allowed)} (grader/README.md: {sorted(allowed) or 'nothing'})"
    )
    if not allowed:  # the hidden phase sees the same; it reports only pass or fail
        own = graded.test("f_self", "gradient_at_random_points")
        assert own["status"] == "passed", (
            f"{graded.column}: a student's hidden phase found what its public phase left "
            f"({graded.col.out / '_instructor' / 'hidden_failures.md'})"
        )
    folders = ("/tmp", "/var/tmp", "/dev/shm")
    left = {p for p in folders if Path(p, channels.MARKER).exists()}
    assert left <= ({"/dev/shm"} & {"/" + c.replace("_", "/") for c in allowed}), (
        f"{graded.column}: the writer's files outlived it in {sorted(left)}"
    )


def test_grade_and_verify_refuse_unconfined_student_code_unless_told(tmp_path):
    """Root without namespaces and without Landlock (a container whose kernel lacks it):
    the class's code would run as a uid that can read whatever any user may. ``grade``
    and ``verify`` stop before any work and say how to get confinement or how to accept
    the risk; nothing is written."""
    write_submission(tmp_path / "subs", "a_student", SOLUTION)
    env = os.environ | {"GRADER_ISOLATION": "uid", "GRADER_LANDLOCK": "0"}
    out = tmp_path / "out"
    for command in (
        ["grade", str(tmp_path / "subs"), "--out", str(out), "--chapters", "ch00"],
        ["verify", str(out)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "grader", *command],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 2, f"{command[0]}: {done.returncode}\n{done.stderr[-2000:]}"
        assert "would not be confined" in done.stderr, done.stderr[-2000:]
        assert "--no-confinement" in done.stderr and "no Landlock" in done.stderr, done.stderr
        assert not (out / "grades.csv").exists(), f"{command[0]} graded anyway"
