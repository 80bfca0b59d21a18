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
from tests.grader_data.helpers import SOLUTION, STUB, readable_python_prefix, write_submission

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(os.geteuid() != 0, reason="the columns are made from root (setpriv)"),
]
NORMAL_USER = 60990  # a uid outside every sandbox range, with no entry in /etc/passwd
ROWS = (
    "read_solution", "read_hidden", "read_submissions", "read_outputs", "read_home",
    "solution_via_sys_path", "write_outside", "write_classmate", "write_home", "write_outputs",
    "tcp", "udp", "unix_socket_by_path", "signal_outside",
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
    }}


def gradient_at(w, x, target):
    mask = sum(1 << bit for bit, fn in enumerate(_tries().values()) if _ok(fn))
    return -16.0 if not mask else float(mask)
"""


class Column:
    """One way of running the grader: its command prefix, environment and files."""

    def __init__(self, name: str, tmp: Path) -> None:
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
def listeners(folder: Path):
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


@pytest.mark.parametrize("column", COLUMNS)
def test_a_submission_reaches_nothing_outside_its_sandbox(tmp_path, column):
    if column == "root" and isolation.mode() != "namespace":
        pytest.skip("namespaces are refused here: the container column covers root")
    col = Column(column, tmp_path)
    everywhere = [d for d in world_writable() if not d.startswith(str(col.base))]
    writable = everywhere
    if column in ("root", "normal-user"):  # its /tmp and /dev/shm are its own, in memory
        writable = [d for d in writable if not d.startswith(("/tmp", "/dev/shm"))]
    if column in ("container", "landlock"):  # multiprocessing's semaphores live there:
        # its own files, never readable by another uid (container), or the README's gap
        writable = [d for d in writable if not d.startswith("/dev/shm")]
        everywhere = [d for d in everywhere if not d.startswith("/dev/shm")]
    try:
        with listeners(tmp_path) as (port, unix):
            classmate = col.subs / "a_classmate" / "ch00" / "training_loop.py"
            where = {
                "repo": str(REPO), "classmate": str(classmate), "out": str(col.out),
                "home": str(col.home), "writable": writable, "marker": MARKER, "port": port,
                "unix": unix,
            }  # fmt: skip
            write_submission(col.subs, "a_classmate", SOLUTION)
            write_submission(col.subs, "b_prober", STUB + PROBER.format(where=where))
            col.chown_tree(col.subs)
            before = digest(classmate)
            done = subprocess.run(
                [*col.prefix, sys.executable, "-m", "grader", "grade", str(col.subs),
                 "--out", str(col.out), "--chapters", "ch00", "--jobs", "1", "--no-gradebook",
                 "--test-timeout", "60", *col.flags],
                cwd=REPO, env=col.env, capture_output=True, text=True, timeout=800,
            )  # fmt: skip
        assert done.returncode == 0, f"{column}: the grader failed: {done.stderr[-3000:]}"
        data = json.loads((col.out / "b_prober" / "results.json").read_text())
        probe = next(t for t in data["tests"] if t["name"].endswith("gradient_at_the_books_point"))
        found = set()
        if probe["status"] != "passed":
            import re

            value = re.search(r"(?:returned|got) (-?[0-9.]+(?:e[-+]?[0-9]+)?)", probe["output"])
            assert value, f"{column}: the prober failed without a mask: {probe['output']}"
            mask = int(float(value.group(1)))
            found = {name for bit, name in enumerate(ROWS) if mask >> bit & 1}
        abi = isolation.landlock_abi()
        print(f"{column} (Landlock ABI {abi}): reached {sorted(found) or 'nothing'}")
        assert found <= allowed_here(column), (
            f"{column}: a submission reached {sorted(found - allowed_here(column))} "
            f"(grader/README.md says this column leaves open only "
            f"{sorted(allowed_here(column)) or 'nothing'})"
        )
        left = [d for d in everywhere if Path(d, MARKER).exists()]
        left += [str(p) for p in (col.home / MARKER, col.out / MARKER) if p.exists()]
        assert not left, f"{column}: files the prober wrote are on disk: {left}"
        assert digest(classmate) == before, f"{column}: the classmate's submission was changed"
    finally:
        for d in world_writable():
            with contextlib.suppress(OSError):
                Path(d, MARKER).unlink()
        col.cleanup()
