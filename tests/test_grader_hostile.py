"""Hostile and broken submissions: each gets a clear reason and zero only for what it
broke, and every other submission's grade is unaffected. One grading run (ch00, two
jobs, short limits) serves every assertion."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from grader import collect, grade, sandbox
from harness import index
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

pytestmark = pytest.mark.timeout(600)

FORGED = '{"score": 1000, "tests": [{"name": "x", "score": 1000, "status": "passed"}]}'

HOSTILE = {
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
        "_right = gradient_at\n"
        "def gradient_at(w, x, target):\n"
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
        "    hoard = [bytearray(1 << 30)]  # the first GiB fits, more does not\n"
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
    "forged_stdout_and_disk": STUB
    + "\nimport os as _os\nprint('"
    + FORGED
    + "')\nfor _d in ('.', '..', '../..'):\n    try:\n"
    + "        open(_os.path.join(_d, 'results.json'), 'w').write('"
    + FORGED
    + "')\n    except OSError:\n        pass\n",
    "forged_channel": STUB
    + "\nimport json as _json, os as _os\n"
    + "for _fd in range(3, 64):\n    for _id in ('exercises/ch00/test_training_loop.py::test_gradient_at_the_books_point',):\n"
    + "        try:\n"
    + "            _os.write(_fd, (_json.dumps({'body': _json.dumps({'ev': 'result', 'nodeid': _id, 'outcome': 'passed'}), 'mac': '0'}) + '\\n').encode())\n"
    + "        except OSError:\n            pass\n",
    "megabytes_of_output": with_override(
        "print('x' * (20 << 20))\nimport sys\nsys.stderr.write('y' * (5 << 20))\n"
    ),
    "deletes_around_it": with_override(
        "import os as _os, shutil as _sh\n"
        "for _d in ('.', '..', '../..', _os.path.dirname(__file__)):\n"
        "    try:\n"
        "        for _n in _os.listdir(_d):\n"
        "            _p = _os.path.join(_d, _n)\n"
        "            (_sh.rmtree(_p, ignore_errors=True) if _os.path.isdir(_p) else _os.unlink(_p))\n"
        "    except OSError:\n"
        "        pass\n"
    ),
}

# As root without namespaces the submission runs as root: nothing bounds a fork bomb
# (root is exempt from RLIMIT_NPROC) or stops it deleting files, so those two only run
# where the grader can stop them (see grader/README.md).
FORKS_BOUNDED = os.geteuid() != 0 or sandbox.isolation() == "namespace"
if not FORKS_BOUNDED:
    del HOSTILE["fork_bomb"], HOSTILE["deletes_around_it"]

CONFTEST_PASSES = (
    "import pytest\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    report = yield\n    report.outcome = 'passed'\n    return report\n"
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("out")
    write_submission(subs, "control", SOLUTION)
    write_submission(subs, "control_two", SOLUTION)
    write_submission(subs, "missing_chapter", None)
    for student, module in HOSTILE.items():
        write_submission(subs, student, module)
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
    (link / "ch00" / "training_loop.py").symlink_to(
        Path(collect.__file__).parents[1] / "solutions/ch00/training_loop.py"
    )
    chapters = [index.chapter("ch00")]
    found, _ = collect.discover(subs, chapters)
    limits = sandbox.Limits(test_timeout=10, grace=5, wall=240, memory_mb=2048, nproc=48, threads=1)
    grade.grade(
        found, out, chapters, jobs=2, limits=limits, progress_stream=io.StringIO(), gradebook=False
    )
    return subs, out


def total(out, student) -> int:
    return int(grades(out)[student]["total"])


def test_other_submissions_are_unaffected(graded):
    _, out = graded
    assert total(out, "control") == total(out, "control_two") == CH00_MAX


@pytest.mark.parametrize(
    "student, pattern",
    [
        ("syntax_error", "SyntaxError"),
        ("missing_chapter", "not found"),
        ("sys_exit_at_import", "SystemExit"),
        ("symlink_out", "not found"),
        ("conftest_forces_passes", "TODO: implement"),
        ("forged_results_file", "TODO: implement"),
        ("forged_stdout_and_disk", "TODO: implement"),
        ("forged_channel", "TODO: implement"),
    ],
)
def test_whole_chapter_broken_scores_zero_with_a_reason(graded, student, pattern):
    _, out = graded
    assert total(out, student) == 0
    failed = failed_tests(out, student)
    assert len(failed) == len(results(out, student)["tests"])
    assert all(pattern in output for output in failed.values()), set(failed.values())


@pytest.mark.parametrize(
    "student, broken, pattern",
    [
        ("wrong_signature", "gradient_at", "TypeError"),
        ("infinite_loop", "gradient_at", "Timeout"),
        ("stubborn_loop", "gradient_at", "killed|wall-clock"),
        ("memory_bomb", "plot", "MemoryError"),
        pytest.param(
            "fork_bomb",
            "plot",
            "Error",
            marks=pytest.mark.skipif(not FORKS_BOUNDED, reason="root without namespaces"),
        ),
        ("exits_in_a_test", "gradient_at", "exited|not run"),
    ],
)
def test_zero_only_for_what_it_broke(graded, student, broken, pattern):
    import re

    _, out = graded
    failed = failed_tests(out, student)
    assert failed, f"{student} lost nothing"
    assert all(broken in name for name in failed), f"{student} lost other tests: {sorted(failed)}"
    assert all(re.search(pattern, o) for o in failed.values()), set(failed.values())
    lost = sum(
        t["max_score"] for t in results(out, student)["tests"] if t.get("status") == "failed"
    )
    assert total(out, student) == CH00_MAX - lost > 0


@pytest.mark.parametrize(
    "student",
    [
        "megabytes_of_output",
        "zip_slip",
        pytest.param(
            "deletes_around_it",
            marks=pytest.mark.skipif(not FORKS_BOUNDED, reason="root without namespaces"),
        ),
    ],
)
def test_harmless_mischief_costs_nothing(graded, student):
    _, out = graded
    assert total(out, student) == CH00_MAX, failed_tests(out, student)


def test_refused_files_are_named_in_the_feedback(graded):
    _, out = graded
    zip_notes = results(out, "zip_slip")["output"]
    assert "../escape.py" in zip_notes and "/abs.py" in zip_notes
    assert "symbolic link" in results(out, "symlink_out")["output"]
    assert "missing" in results(out, "missing_chapter")["output"]


def test_forged_lines_are_ignored_and_reported(graded):
    _, out = graded
    assert "unsigned lines" in results(out, "forged_channel")["output"]


def test_nothing_outside_the_sandbox_was_written_or_deleted(graded):
    subs, out = graded
    assert not (subs.parent / "escape.py").exists()
    assert (subs / "control" / "ch00" / "training_loop.py").read_text() == SOLUTION
    assert results(out, "forged_stdout_and_disk")["score"] == 0
    assert grades(out)["forged_results_file"]["total"] == "0"


def test_no_process_is_left_behind(graded):
    if sandbox.isolation() != "namespace":
        pytest.skip("sandbox uids are only used when the grader runs as root")
    stray = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            uid = int(
                next(ln for ln in status.read_text().splitlines() if ln.startswith("Uid:")).split()[
                    1
                ]
            )
        except (OSError, StopIteration, ValueError):
            continue
        if sandbox.UID_BASE <= uid < sandbox.UID_BASE + sandbox.UID_COUNT:
            stray.append(status.parent.name)
    assert not stray, f"sandbox processes still alive: {stray} (grader pid {os.getpid()})"
