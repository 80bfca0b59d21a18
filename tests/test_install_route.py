"""The student's install on Linux gets the CPU build of torch, on each route the README
gives (uv, and pip), as a normal user with no pip configuration, in an environment of at
most 1.5 GB; the grader's extra is enough for `grader check`.

PyTorch's CPU index cannot be reached from the machines this runs on (PyPI can): the
course's CPU wheel is served from a local folder laid out as a package index, and the
route's configured index URL is pointed at it; every other package comes from PyPI.
Slow (two installs: ~2-5 minutes on a busy 2-core machine): `nox -s install_route` runs
it, `nox -s tests` leaves it out (CI's 15 minutes have no room for it).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.target import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

CPU_INDEX = "https://download.pytorch.org/whl/cpu"
WHEELS = Path(os.environ.get("COURSE_CPU_WHEELS", "/opt/wheels"))
LIMIT_BYTES = 1.5e9
STUDENT = 65534  # nobody: a user with no home, no pip configuration, no access to /root
# This machine reaches PyPI through a proxy whose certificate only the system's bundle
# trusts: TLS trust, not a package source, so the routes stay as the README gives them.
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


def _wheel() -> Path:
    found = sorted(WHEELS.glob("torch-*+cpu-cp311-cp311-manylinux*_x86_64.whl"))
    if not found:
        pytest.skip(f"no CPU build of torch for CPython 3.11 in {WHEELS}")
    return found[-1]


def _python() -> str:
    """A Python 3.11 a normal user can run (the wheel is for CPython 3.11)."""
    for path in ("/usr/local/bin/python3.11", "/usr/bin/python3.11"):
        if os.access(path, os.X_OK):
            return path
    pytest.skip("no Python 3.11 outside root's home")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # every 404 for a package PyPI serves is expected
        pass


@pytest.fixture(scope="module")
def cpu_index(tmp_path_factory):
    """The CPU wheel served as a PEP 503 simple index on localhost: the index URL."""
    if os.geteuid() != 0:
        pytest.skip("switching to a normal user needs root")
    try:
        urllib.request.urlopen("https://pypi.org/simple/pip/", timeout=20).close()
    except OSError as exc:
        pytest.skip(f"PyPI is out of reach: {exc}")
    wheel = _wheel()
    root = tmp_path_factory.mktemp("cpu-index")
    (root / "files").mkdir()
    (root / "files" / wheel.name).symlink_to(wheel)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (root / "simple" / "torch").mkdir(parents=True)
    (root / "simple" / "index.html").write_text('<a href="torch/">torch</a>\n')
    href = f"../../files/{wheel.name.replace('+', '%2B')}#sha256={digest}"
    (root / "simple" / "torch" / "index.html").write_text(f'<a href="{href}">{wheel.name}</a>\n')
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


@pytest.fixture
def student():
    """A copy of this working tree and a fresh home, both owned by the student (outside
    pytest's own temporary folder, which only its owner may enter)."""
    top = Path(tempfile.mkdtemp(prefix="course-install-"))
    home, project = top / "home", top / "course"
    home.mkdir()
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, project / name)
    for path in (top, *top.rglob("*")):
        os.lchown(path, STUDENT, STUDENT)
    yield home, project
    shutil.rmtree(top, ignore_errors=True)


def as_student(command: str, cwd: Path, home: Path, timeout: float = 900):
    """``command`` in bash as the student: no pip configuration, no inherited environment."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PIP_CONFIG_FILE": os.devnull}
    env |= {"SSL_CERT_FILE": CA_BUNDLE, "LANG": "C.UTF-8"}
    started = time.monotonic()
    proc = subprocess.run(
        ["setpriv", f"--reuid={STUDENT}", f"--regid={STUDENT}", "--clear-groups"]
        + ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc, time.monotonic() - started


def size_of(folder: Path) -> int:
    """Bytes the folder's files hold, each hard-linked file counted once."""
    seen, total = set(), 0
    for path in folder.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink() and info.st_ino not in seen:
            seen.add(info.st_ino)
            total += info.st_size
    return total


def readme_command(pattern: str) -> str:
    """The README's install line matching ``pattern`` (what the student copies)."""
    for line in (REPO / "README.md").read_text().splitlines():
        if re.search(pattern, line):
            return line.split("#")[0].strip()
    raise AssertionError(f"README.md gives no install command matching {pattern!r}")


def assert_cpu_torch(python: Path, home: Path, route: str, seconds: float) -> None:
    proc, _ = as_student(
        f"{python} -c 'import torch; print(torch.__version__, torch.version.cuda)'",
        python.parent,
        home,
    )
    version, cuda = proc.stdout.split()
    size = size_of(python.parent.parent)
    print(f"{route}: {seconds:.0f} s, {size / 1e9:.2f} GB, torch {version}")
    assert cuda == "None", f"{route} installed torch {version} built for CUDA {cuda}"
    assert size <= LIMIT_BYTES, f"{route} made a {size / 1e9:.2f} GB environment"


def test_the_uv_route_gets_cpu_torch_and_the_grader_check_runs(cpu_index, student):
    home, project = student
    pyproject = project / "pyproject.toml"
    assert CPU_INDEX in pyproject.read_text(), "pyproject.toml no longer declares the CPU index"
    pyproject.write_text(pyproject.read_text().replace(CPU_INDEX, cpu_index))
    tools, _ = as_student(
        f"{_python()} -m venv {home}/tools && {home}/tools/bin/pip install -q "
        f"--cert {CA_BUNDLE} uv",
        project,
        home,
    )
    assert tools.returncode == 0, tools.stdout + tools.stderr
    command = readme_command(r"^uv sync ")
    proc, seconds = as_student(
        f"PATH={home}/tools/bin:$PATH {command} --python {_python()}", project, home
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert_cpu_torch(project / ".venv" / "bin" / "python", home, "uv sync", seconds)
    check, _ = as_student(
        ".venv/bin/python -m grader check ch00 --impl solutions", project, home, timeout=300
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert re.search(r"ch00 +(\d+) / \1 ", check.stdout), check.stdout[-2000:]


def test_the_pip_route_gets_cpu_torch(cpu_index, student):
    home, project = student
    command = readme_command(rf"pip install .*--index-url {re.escape(CPU_INDEX)}")
    command = command.replace(CPU_INDEX, cpu_index).replace("python ", ".venv/bin/python ", 1)
    proc, seconds = as_student(
        f"{_python()} -m venv .venv && {command} --cert {CA_BUNDLE}", project, home
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert_cpu_torch(project / ".venv" / "bin" / "python", home, "pip", seconds)
    tests, _ = as_student(
        ".venv/bin/python -m pytest exercises/ch00 --impl solutions -q -p no:cacheprovider",
        project,
        home,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
