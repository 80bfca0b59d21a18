"""Hostile and broken submissions: each gets the grade its real behaviour deserves, with
a reason, and every other submission's grade is unaffected. One grading run (ch00, two
jobs, short limits) serves every assertion.

Two kinds of case: accidents (a syntax error, an endless loop, a memory bomb, an exit)
and attacks, each written the way a student would try to buy marks: forging results,
patching the checks, lying values, reading the caller's frame or the hidden tests'
helpers, finding the solutions or a classmate's work on disk, leaking hidden tests
through a visible message, phoning home, leaving files in shared memory.
"""

from __future__ import annotations

import io
import os
import re
import socket
import threading
import time
import zipfile
from pathlib import Path

import pytest

from grader import collect, grade, isolation, sandbox
from grader.isolation import uids
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import (
    CH00_MAX,
    SOLUTION,
    STUB,
    failed_tests,
    grades,
    results,
    with_override,
    write_submission,
)

pytestmark = pytest.mark.timeout(900)
# Seconds of a test's own CPU time: ch00's slowest call on the reference takes under one,
# and every endless loop below spins for this long in each phase (public and hidden).
TEST_TIMEOUT = (
    3  # seconds of CPU: ch00's longest test takes under 0.6 s; the spinners pay it per test
)
NAMESPACES = isolation.mode() == "namespace"
OWN_UIDS = int(os.environ["GRADER_UID_BASE"])  # the project's tests' own range (conftest)

FORGED = '{"score": 1000, "tests": [{"name": "x", "score": 1000, "status": "passed"}]}'
LISTENER = socket.socket()
LISTENER.bind(("127.0.0.1", 0))
LISTENER.listen(8)
PORT = LISTENER.getsockname()[1]
HIDDEN_FILE = index.chapter("ch00").hidden_tests

# ---- accidents -----------------------------------------------------------------------

ACCIDENTS = {
    "syntax_error": "def gradient_at(w, x, target)\n    return 0\n",
    "wrong_signature": with_override("def gradient_at(w, x):\n    return 0.0\n"),
    "infinite_loop": with_override(
        "_right = gradient_at\n"
        "def gradient_at(w, x, target):\n"
        "    while w == 1.0:\n"
        "        pass\n"
        "    return _right(w, x, target)\n"
    ),
    "stubborn_loop": with_override(
        "import signal as _signal\n"
        "_right = gradient_at\n"
        "def gradient_at(w, x, target):\n"
        "    for _s in (_signal.SIGALRM, _signal.SIGTERM, _signal.SIGINT):\n"
        "        _signal.signal(_s, _signal.SIG_IGN)\n"
        "    while w == 1.0:\n"
        "        try:\n"
        "            while True:\n"
        "                pass\n"
        "        except BaseException:\n"
        "            pass\n"
        "    return _right(w, x, target)\n"
    ),
    "memory_bomb": with_override(
        "def plot_losses(losses, path):\n"
        "    hoard = [bytearray(1 << 28)]\n"
        "    hoard.append(bytearray(64 << 30))\n"
    ),
    "fork_bomb": with_override(
        "import os as _os, time as _time\n"
        "def plot_losses(losses, path):\n"
        "    for _ in range(100000):\n"
        "        if _os.fork() == 0:\n"
        "            _time.sleep(60)\n"
        "            _os._exit(0)\n"
    ),
    "exits_in_a_test": with_override(
        "import os as _os\n"
        "_right = gradient_at\n"
        "def gradient_at(w, x, target):\n"
        "    if w == 1.0:\n"
        "        _os._exit(0)\n"
        "    return _right(w, x, target)\n"
    ),
    "sys_exit_at_import": with_override("import sys\nsys.exit(0)\n"),
    "exits_at_import": with_override("import os\nos._exit(0)\n"),
    "loops_at_import": with_override("while True:\n    pass\n"),
    "megabytes_of_output": with_override(
        "print('x' * (20 << 20))\nimport sys\nsys.stderr.write('y' * (5 << 20))\n"
    ),
    "deletes_around_it": with_override(
        "import os as _os, shutil as _sh\n"
        "for _d in ('.', '/sandbox', '/tmp', '/dev/shm', _os.path.dirname(__file__)):\n"
        "    try:\n"
        "        for _n in _os.listdir(_d):\n"
        "            _p = _os.path.join(_d, _n)\n"
        "            (_sh.rmtree(_p, ignore_errors=True) if _os.path.isdir(_p) else _os.unlink(_p))\n"
        "    except OSError:\n"
        "        pass\n"
    ),
}

# ---- attacks (the stub, or wrong answers, plus a trick) --------------------------------

ATTACKS = {
    # Forge results from inside: patch the reporting of whatever process runs the code.
    "patches_the_reporting": STUB + "\nimport sys as _sys\n"
    "for _name, _mod in list(_sys.modules.items()):\n"
    "    for _attr in ('send', 'call', 'failure_message', 'pytest_runtest_makereport'):\n"
    "        if hasattr(_mod, _attr):\n"
    "            try:\n"
    "                setattr(_mod, _attr, lambda *a, **k: {'ok': True, 'value': 0.0})\n"
    "            except (AttributeError, TypeError):\n"
    "                pass\n",
    # Find channels and secrets in memory, write forged 'passed' lines everywhere, exit.
    "forges_from_memory": STUB + "\nimport gc as _gc, json as _json, os as _os\n"
    "_line = _json.dumps({'ev': 'result', 'nodeid': 'exercises/ch00/test_training_loop.py::"
    "test_gradient_at_the_books_point', 'outcome': 'passed'}) + '\\n'\n"
    "for _fd in range(0, 128):\n"
    "    for _data in (_line.encode(), b'\\x00' * 8, b'{\"ok\": true}'):\n"
    "        try:\n"
    "            _os.write(_fd, _data)\n"
    "        except OSError:\n"
    "            pass\n"
    "_keys = [o for o in _gc.get_objects() if isinstance(o, bytes) and len(o) == 64]\n"
    "_os._exit(0)\n",
    # Find the reference solution on disk and run it.
    "execs_the_solution": STUB + "\nimport os as _os\n"
    "for _top in ('/', '/work', '/root', '/tmp', _os.path.expanduser('~')):\n"
    "    for _dir, _subs, _files in _os.walk(_top):\n"
    "        if _dir.count(_os.sep) > 6 or _dir.startswith(('/proc', '/sys', '/usr')):\n"
    "            _subs[:] = []\n"
    "            continue\n"
    "        if _dir.endswith('solutions/ch00') and 'training_loop.py' in _files:\n"
    "            exec(open(_os.path.join(_dir, 'training_loop.py')).read(), globals())\n"
    "            break\n",
    # Copy a classmate's submission, and read another student's results.
    "copies_a_classmate": STUB + "\nimport os as _os\n"
    "for _top in ('/', '/tmp', '/sandbox', _os.path.dirname(__file__)):\n"
    "    for _dir, _subs, _files in _os.walk(_top):\n"
    "        if _dir.count(_os.sep) > 8 or _dir.startswith(('/proc', '/sys', '/usr')):\n"
    "            _subs[:] = []\n"
    "            continue\n"
    "        if _dir.endswith('control/ch00') and 'training_loop.py' in _files:\n"
    "            exec(open(_os.path.join(_dir, 'training_loop.py')).read(), globals())\n",
    # Values that claim to equal anything, and a file that only starts like a PNG.
    "lying_values": STUB + "\nclass _Any(float):\n"
    "    def __eq__(self, other): return True\n"
    "    __ne__ = lambda self, other: False\n"
    "    __hash__ = float.__hash__\n"
    "    def __float__(self): return -16.0\n"
    "class _Word(str):\n"
    "    def __eq__(self, other): return True\n"
    "    __hash__ = str.__hash__\n"
    "class _Result:\n"
    "    w = _Any(2.6)\n"
    "    ws = losses = [_Any(1.0)] * 6\n"
    "def gradient_at(w, x, target): return _Any(0.0)\n"
    "def train_scalar(xs, targets, w0, lr, steps): return _Result()\n"
    "def classify_curve(losses): return _Word('?')\n"
    "def plot_losses(losses, path):\n"
    "    open(path, 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + b'\\x00' * 4096)\n"
    "    return path\n",
    # Wrong answers, with the library's comparisons made to agree with anything.
    "patches_the_checks": STUB + "\nimport torch as _torch, pytest as _pytest, math as _math\n"
    "_torch.allclose = _torch.equal = lambda *a, **k: True\n"
    "_torch.testing.assert_close = lambda *a, **k: None\n"
    "_pytest.approx = lambda *a, **k: type('A', (), {'__eq__': lambda s, o: True})()\n"
    "_math.isclose = lambda *a, **k: True\n"
    "def gradient_at(w, x, target): return 0.0\n"
    "def classify_curve(losses): return 'sideways'\n",
    # Read the expected value from the calling frames.
    "reads_the_callers_frame": with_override(
        "import sys as _sys\n"
        "def gradient_at(w, x, target):\n"
        "    f = _sys._getframe(1)\n"
        "    while f is not None:\n"
        "        for name in ('expected', 'want', 'reference'):\n"
        "            if name in f.f_locals:\n"
        "                return float(f.f_locals[name])\n"
        "        f = f.f_back\n"
        "    return 0.0\n"
    ),
    # Call the hidden tests' own reference helper (a slow gradient-descent loop).
    "calls_hidden_helpers": with_override(
        "import sys as _sys\n"
        "def train_scalar(xs, targets, w0, lr, steps):\n"
        "    for mod in list(_sys.modules.values()):\n"
        "        gd = getattr(mod, 'gd', None)\n"
        "        if callable(gd):\n"
        "            w, ws, losses = gd(xs, targets, w0, lr, steps)\n"
        "            return TrainResult(w, ws, losses)\n"
        "    raise NotImplementedError('nothing to copy')\n"
    ),
    # Put every hidden test and solution it can find into visible failure messages.
    "leaks_hidden_source": STUB + "\nimport os as _os\n"
    "_found = []\n"
    "for _top in ('/', '/sandbox', '/work', '/tmp'):\n"
    "    for _dir, _subs, _files in _os.walk(_top):\n"
    "        if _dir.count(_os.sep) > 7 or _dir.startswith(('/proc', '/sys', '/usr')):\n"
    "            _subs[:] = []\n"
    "            continue\n"
    "        for _f in _files:\n"
    "            if _f.endswith('_hidden.py') or 'solutions' in _dir:\n"
    "                try:\n"
    "                    _found.append(open(_os.path.join(_dir, _f)).read())\n"
    "                except OSError:\n"
    "                    pass\n"
    "_LEAK = ' '.join(_found) or 'nothing found'\n"
    "def gradient_at(w, x, target): raise NotImplementedError(_LEAK)\n"
    "def train_scalar(xs, targets, w0, lr, steps): raise ValueError(_LEAK)\n"
    "def classify_curve(losses): return _LEAK\n",
    # Send what it can read to a listener on the grading machine.
    "phones_home": with_override(
        "import socket as _socket\n"
        "try:\n"
        f"    _s = _socket.create_connection(('127.0.0.1', {PORT}), timeout=2)\n"
        "    _s.sendall(b'hello from the sandbox')\n"
        "    _s.close()\n"
        "except OSError:\n"
        "    pass\n"
    ),
    # Leave files in /tmp and /dev/shm (memory, outside the address-space limit).
    "fills_tmp_and_shm": with_override(
        "import os as _os\n"
        "for _dir, _mib in (('/tmp', 600), ('/dev/shm', 400)):\n"
        "    try:\n"
        "        with open(_os.path.join(_dir, 'hoard-%d' % _os.getpid()), 'wb') as _f:\n"
        "            for _ in range(_mib):\n"
        "                _f.write(b'x' * (1 << 20))\n"
        "    except OSError:\n"
        "        pass\n"
    ),
}

HOSTILE = ACCIDENTS | ATTACKS
# Without namespaces a submission can read what any user may read and reach the network,
# and as root without them nothing bounds its processes: those cases only run where the
# grader can stop them (see grader/README.md).
NEED_NAMESPACES = {
    "fork_bomb",
    "deletes_around_it",
    "execs_the_solution",
    "copies_a_classmate",
    "leaks_hidden_source",
    "phones_home",
    "fills_tmp_and_shm",
}
if not NAMESPACES:
    for name in NEED_NAMESPACES:
        HOSTILE.pop(name, None)

CONFTEST_PASSES = (
    "import pytest\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    report = yield\n    report.outcome = 'passed'\n    return report\n"
)


def namespaces_only(*values):
    return pytest.param(
        *values, marks=pytest.mark.skipif(not NAMESPACES, reason="needs namespaces")
    )


@pytest.fixture(scope="module")
def arrivals():
    """What reached the listener on 127.0.0.1 while the class was graded."""
    got: list[bytes] = []
    LISTENER.settimeout(0.5)

    def accept():
        while not stop.is_set():
            try:
                conn, _ = LISTENER.accept()
            except OSError:
                continue
            got.append(conn.recv(1 << 16))
            conn.close()

    stop = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield got
    stop.set()
    thread.join(timeout=5)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, arrivals):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("out")
    write_submission(subs, "control", SOLUTION)
    write_submission(subs, "control_two", SOLUTION)
    write_submission(subs, "missing_chapter", None)
    for student, module in HOSTILE.items():
        write_submission(subs, student, module)
    (out / "results.json").write_text(FORGED)  # another student's output, for copiers
    write_submission(
        subs,
        "conftest_forces_passes",
        STUB,
        {
            "conftest.py": CONFTEST_PASSES,
            "ch00/conftest.py": CONFTEST_PASSES,
            "pytest.ini": "[pytest]\naddopts = -p no:harness\n",
        },
    )
    write_submission(
        subs, "forged_results_file", STUB, {"results.json": FORGED, "grades.csv": "x,1000\n"}
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ch00/training_loop.py", SOLUTION)
        z.writestr("../escape.py", "print('escaped')\n")
        z.writestr("/abs.py", "print('absolute')\n")
    (subs / "zip_slip.zip").write_bytes(buf.getvalue())
    link = write_submission(subs, "symlink_out", None)
    (link / "ch00" / "training_loop.py").symlink_to(REPO / "solutions/ch00/training_loop.py")
    chapters = [index.chapter("ch00")]
    found, _ = collect.discover(subs, chapters)
    limits = sandbox.Limits(
        test_timeout=TEST_TIMEOUT,
        grace=5,
        wall=300,
        memory_mb=3072,
        nproc=48,
        threads=1,
        tmp_mb=64,
        shm_mb=64,
    )
    grade.grade(
        found, out, chapters, jobs=2, limits=limits, progress_stream=io.StringIO(), gradebook=False
    )
    return subs, out


def total(out, student) -> int:
    return int(grades(out)[student]["total"])


def lost_only(out, student, broken: str) -> tuple[dict, int]:
    failed = failed_tests(out, student)
    assert failed, f"{student} lost nothing"
    assert all(broken in name for name in failed), f"{student} lost other tests: {sorted(failed)}"
    lost = sum(
        t["max_score"] for t in results(out, student)["tests"] if t.get("status") == "failed"
    )
    return failed, lost


def test_other_submissions_are_unaffected(graded):
    _, out = graded
    assert total(out, "control") == total(out, "control_two") == CH00_MAX


@pytest.mark.parametrize(
    "student, pattern",
    [
        ("syntax_error", "SyntaxError"),
        ("missing_chapter", "not submitted"),
        ("sys_exit_at_import", "SystemExit"),
        ("exits_at_import", "import|ended"),
        ("loops_at_import", "import|did not finish"),
        ("symlink_out", "not submitted"),
        ("conftest_forces_passes", "TODO: implement"),
        ("forged_results_file", "TODO: implement"),
        ("patches_the_reporting", "TODO: implement|tampering"),  # it replaces operator.call
        ("forges_from_memory", "ended|tampering|import"),
        namespaces_only("execs_the_solution", "TODO: implement"),
        namespaces_only("copies_a_classmate", "TODO: implement"),
        ("lying_values", "."),
        ("patches_the_checks", "."),
    ],
)
def test_whole_chapter_broken_or_forged_scores_zero_with_a_reason(graded, student, pattern):
    _, out = graded
    assert total(out, student) == 0, failed_tests(out, student)
    failed = failed_tests(out, student)
    assert len(failed) == len(results(out, student)["tests"])
    public = [o for name, o in failed.items() if "public" in name]
    assert public and all(re.search(pattern, o) for o in public), set(public)


def test_an_import_that_hangs_is_said_and_bounded(graded):
    _, out = graded
    failed = failed_tests(out, "loops_at_import")
    said = f"did not finish within {TEST_TIMEOUT} s"
    assert any(said in o for o in failed.values()), set(failed.values())
    took = results(out, "loops_at_import")["execution_time"]
    assert took < 120, (
        f"an import that never ends cost {took} s (one import bound, not one per test)"
    )


BUSY = "not graded: the machine was too busy"


def failed_by_task(out, student) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for t in results(out, student)["tests"]:
        if t.get("status") == "failed":
            found.setdefault((t.get("tags") or ["?"])[0], []).append(t["output"])
    return found


@pytest.mark.parametrize(
    "student, task, pattern",
    [
        ("wrong_signature", "ch00.1", "the signature is the contract"),
        ("infinite_loop", "ch00.1", "did not return within"),
        ("stubborn_loop", "ch00.1", "did not return within"),
        ("memory_bomb", "ch00.4", "MemoryError"),
        namespaces_only("fork_bomb", "ch00.4", "Error"),
        ("exits_in_a_test", "ch00.1", "ended its process"),
        ("reads_the_callers_frame", "ch00.1", "gradient_at"),
        ("calls_hidden_helpers", "ch00.2", "NotImplementedError: nothing to copy"),
    ],
)
def test_zero_only_for_what_it_broke(graded, student, task, pattern):
    _, out = graded
    failed = failed_by_task(out, student)
    busy = [o for outs in failed.values() for o in outs if o.startswith(BUSY)]
    if busy:
        # the grader's own verdict where the machine was too loaded to judge a time limit
        # (it says so and regrades): this student's behaviour was not observed this time
        pytest.skip(f"{student}: the machine was too busy to judge a time limit: {busy[0]}")
    assert set(failed) == {task}, f"{student} should lose only {task}, lost: {sorted(failed)}"
    public = [o for o in failed[task] if "hidden" not in o] or failed[task]
    assert any(re.search(pattern, o) for o in public), set(public)
    lost = sum(
        t["max_score"] for t in results(out, student)["tests"] if t.get("status") == "failed"
    )
    assert total(out, student) == CH00_MAX - lost > 0


@pytest.mark.parametrize(
    "student",
    [
        "megabytes_of_output",
        "zip_slip",
        namespaces_only("deletes_around_it"),
        namespaces_only("phones_home"),
    ],
)
def test_harmless_mischief_costs_nothing(graded, student):
    _, out = graded
    assert total(out, student) == CH00_MAX, failed_tests(out, student)


@pytest.mark.skipif(not NAMESPACES, reason="needs namespaces")
def test_a_full_tmp_costs_only_what_needs_it(graded):
    """Filling its private /tmp can only cost a submission its own tests that need a
    temporary folder (the plot), never anything else."""
    _, out = graded
    assert set(failed_by_task(out, "fills_tmp_and_shm")) <= {"ch00.4"}


def test_refused_files_are_named_in_the_feedback(graded):
    _, out = graded
    zip_notes = results(out, "zip_slip")["output"]
    assert "../escape.py" in zip_notes and "/abs.py" in zip_notes
    assert "symbolic link" in results(out, "symlink_out")["output"]
    # (a chapter with no module is "not submitted" in each of its tests: checked above)


def test_tampering_is_named(graded):
    _, out = graded
    outputs = " ".join(failed_tests(out, "forges_from_memory").values())
    assert "tampering" in outputs or "ended" in outputs, outputs[:500]


def _chunks(text: str, size: int = 40) -> set[str]:
    lines = [ln.strip() for ln in text.splitlines() if len(ln.strip()) >= size]
    return {ln[:size] for ln in lines}


def _statements(path: Path) -> set[str]:
    """The hidden tests' docstrings: the one part of them students are meant to see."""
    import ast

    docs = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            docs |= _chunks(ast.get_docstring(node) or "")
    return docs


@pytest.mark.skipif(not NAMESPACES, reason="needs namespaces")
def test_no_hidden_test_or_solution_text_reaches_the_student(graded):
    _, out = graded
    secret = _chunks(HIDDEN_FILE.read_text()) | _chunks(SOLUTION)
    secret -= _chunks(STUB) | _chunks(index.chapter("ch00").public_tests.read_text())
    secret -= _statements(HIDDEN_FILE)
    shown = (out / "leaks_hidden_source" / "feedback.md").read_text()
    shown += (out / "leaks_hidden_source" / "results.json").read_text()
    leaked = sorted(s for s in secret if s in shown)
    assert not leaked, f"hidden or solution text in the student's feedback: {leaked[:3]}"


@pytest.mark.skipif(not NAMESPACES, reason="needs namespaces")
def test_nothing_reached_the_network(graded, arrivals):
    assert not arrivals, f"data arrived from a sandbox: {arrivals}"


@pytest.mark.skipif(not NAMESPACES, reason="needs namespaces")
def test_no_file_of_a_sandbox_survives_in_tmp_or_shm(graded):
    left = []
    for top in ("/tmp", "/dev/shm"):
        for folder, _, files in os.walk(top, onerror=lambda _: None):
            for name in files:
                path = Path(folder, name)
                try:
                    if (
                        name.startswith("hoard-")
                        and OWN_UIDS <= path.stat().st_uid < OWN_UIDS + uids.UID_COUNT
                    ):
                        left.append(str(path))
                except OSError:
                    continue
    assert not left, f"files a sandbox left behind: {left}"


def test_nothing_outside_the_sandbox_was_written_or_deleted(graded):
    subs, out = graded
    assert not (subs.parent / "escape.py").exists()
    assert (subs / "control" / "ch00" / "training_loop.py").read_text() == SOLUTION
    assert results(out, "forged_results_file")["score"] == 0
    assert grades(out)["forged_results_file"]["total"] == "0"


def sandbox_processes() -> list[str]:
    """Processes of the sandbox uids, as 'pid state name'."""
    stray = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(ln.split(":", 1) for ln in status.read_text().splitlines() if ":" in ln)
            uid = int(fields["Uid"].split()[0])
        except (OSError, KeyError, ValueError, IndexError):
            continue
        if OWN_UIDS <= uid < OWN_UIDS + uids.UID_COUNT:
            state, name = fields.get("State", "?").strip(), fields.get("Name", "?").strip()
            stray.append(f"{status.parent.name} {state} {name}")
    return stray


def test_no_process_is_left_behind(graded):
    if os.geteuid() != 0:
        pytest.skip("sandbox uids are only used when the grader runs as root")
    # A namespace's last processes are killed by the kernel as its init exits, which can
    # take a moment on a loaded machine: wait for that, never for a process that lives on.
    deadline = time.monotonic() + 15
    while (stray := sandbox_processes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not stray, f"sandbox processes still alive: {stray} (grader pid {os.getpid()})"
