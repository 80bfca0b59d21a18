"""The student's path runs where Linux's modules do not exist (Windows has no fcntl,
resource, termios, pwd or grp, and no C library to load by name): `pytest exercises/chNN`
and `python -m grader check` (in its weak mode, said once).

Proven here on Linux with a Python whose every process (the grader's too) refuses those
modules and the C library: a virtual environment that sees this one's packages and loads
a blocker first. It records each refused import and who asked, so a module of the course
that needs one is named, while the standard library's own guarded attempts (subprocess
tries fcntl) are not held against it.
"""

from __future__ import annotations

import os
import re
import site
import subprocess
import venv

import pytest

from harness.target import REPO

BLOCKED = ("fcntl", "resource", "termios", "pwd", "grp")
BLOCKER = f"""
import os, sys

BLOCKED = {set(BLOCKED)!r}
LOG = os.environ.get("COURSE_BLOCK_LOG")


def _asked(name):
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
        frame = frame.f_back
    who = frame.f_code.co_filename if frame is not None else "?"
    if LOG:
        with open(LOG, "a") as f:
            f.write(f"{{name}}\\t{{who}}\\n")


class _Refuse:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in BLOCKED:
            _asked(name)
            raise ModuleNotFoundError(f"No module named {{name!r}} (as on Windows)", name=name)
        return None


sys.meta_path.insert(0, _Refuse)

import ctypes

_load = ctypes.CDLL.__init__


def _no_libc(self, name, *args, **kwargs):
    if name is None or os.path.basename(str(name)).startswith("libc."):
        _asked("the C library")
        raise OSError(f"no C library {{name!r}} to load (as on Windows)")
    return _load(self, name, *args, **kwargs)


ctypes.CDLL.__init__ = _no_libc
"""


@pytest.fixture(scope="module")
def windows_like_python(tmp_path_factory) -> str:
    """A Python that sees this environment's packages and refuses Linux's modules."""
    env = tmp_path_factory.mktemp("windows-like") / "venv"
    venv.create(env, with_pip=False)
    (packages,) = (env / "lib").glob("python3*/site-packages")
    shared = [p for p in site.getsitepackages() if os.path.isdir(p)]
    (packages / "course_packages.pth").write_text("\n".join(shared) + "\n")
    (packages / "_refuse_linux.py").write_text(BLOCKER)
    (packages / "zz_refuse_linux.pth").write_text("import _refuse_linux\n")  # after the paths
    return str(env / "bin" / "python")


def run(python: str, args: list[str], log, **env) -> tuple[subprocess.CompletedProcess, list]:
    proc = subprocess.run(
        [python, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1", "COURSE_BLOCK_LOG": str(log), **env},
    )
    asked = [line.split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    ours = [(name, who) for name, who in asked if who.startswith(str(REPO))]
    return proc, ours


def test_the_blocker_refuses_what_windows_lacks(windows_like_python, tmp_path):
    code = "import fcntl"
    proc, ours = run(windows_like_python, ["-c", code], tmp_path / "asked")
    assert proc.returncode != 0 and "as on Windows" in proc.stderr, proc.stderr
    libc = "import ctypes; ctypes.CDLL('libc.so.6')"
    proc, _ = run(windows_like_python, ["-c", libc], tmp_path / "asked")
    assert proc.returncode != 0 and "no C library" in proc.stderr, proc.stderr


def test_pytest_on_a_chapter_needs_no_linux_module(windows_like_python, tmp_path):
    pytest = ["-m", "pytest", "exercises/ch02", "-q", "-p", "no:cacheprovider"]
    proc, ours = run(windows_like_python, [*pytest, "--impl", "solutions"], tmp_path / "asked")
    assert not ours, f"the course's own modules asked for Linux-only modules: {ours}"
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    stub, ours = run(windows_like_python, [*pytest, "-k", "books_graph"], tmp_path / "stub")
    assert not ours and "TODO: implement ch02.1" in stub.stdout, stub.stdout[-2000:] + str(ours)


def test_grader_check_runs_in_its_weak_mode_and_says_so_once(windows_like_python, tmp_path):
    proc, ours = run(
        windows_like_python,
        ["-m", "grader", "check", "ch02", "--impl", "solutions"],
        tmp_path / "asked",
        GRADER_ISOLATION="none",  # what a machine without Linux's isolation gets
    )
    said = proc.stdout + proc.stderr
    assert not ours, f"the course's own modules asked for Linux-only modules: {ours}"
    assert proc.returncode == 0 and re.search(r"ch02 +(\d+) / \1 ", proc.stdout), said[-3000:]
    assert said.count("no sandbox") == 1, said[-3000:]


def test_the_workflow_runs_the_student_path_on_macos_and_windows():
    """The hosted check of this file's claim (.github/workflows/student-platforms.yml)."""
    text = (REPO / ".github" / "workflows" / "student-platforms.yml").read_text()
    assert "macos-" in text and "windows-" in text, text
    assert "pytest exercises/" in text and "grader check" in text, text
