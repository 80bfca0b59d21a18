"""Shared fixtures for the project's own tests (not shipped to students)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.target import REPO

SELFCHECK_TIMEOUT_S = 1500
_HELD_RANGE = []  # the lock on this session's uid range, kept open until the process ends


def claim_uid_range(first: int = 63000, slots: int = 12, width: int = 1000) -> str:
    """The grader's sandbox uids for this test session: a range no other session on this
    machine holds (an flock per range, held while this process lives), so the checks for
    processes left behind never see another test run's sandboxes. An explicit
    GRADER_UID_BASE wins; when every slot is taken the first is shared."""
    if "GRADER_UID_BASE" in os.environ:
        return os.environ["GRADER_UID_BASE"]
    for base in range(first, first + slots * width, width):
        path = Path(tempfile.gettempdir()) / f"pytorch-course-test-uids-{base}.lock"
        try:
            handle = open(path, "a")  # noqa: SIM115 - held for the session on purpose
        except OSError:
            continue  # another user's lock file
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _HELD_RANGE.append(handle)
        return str(base)
    return str(first)


# An xdist worker inherits the range its controller's import of this file claimed: that
# one range is not the worker's own (two workers would see each other's sandboxes as
# leftovers), so a worker claims another. A base the user set is kept everywhere.
CLAIMED_BY_CONFTEST = "PYTORCH_COURSE_TEST_UID_CLAIM"
_inherited = os.environ.get("GRADER_UID_BASE")
if os.environ.get("PYTEST_XDIST_WORKER") and _inherited == os.environ.get(CLAIMED_BY_CONFTEST):
    os.environ.pop("GRADER_UID_BASE", None)
if "GRADER_UID_BASE" not in os.environ:
    os.environ["GRADER_UID_BASE"] = os.environ[CLAIMED_BY_CONFTEST] = claim_uid_range()


# With pytest-xdist (`nox -s tests`) work goes to workers in collection order: the
# longest files first, so no long file is left to run alone at the end. Only an order: a
# file missing here, or misplaced, costs time, never a result.
LONGEST_FIRST = (
    "test_chapters.py",
    "test_grader_answer_reader.py",
    "test_grader_degenerate.py",
    "test_grader_hostile.py",
    "test_grader_anywhere.py",
    "test_grader_resume.py",
    "test_gradescope.py",
    "test_grader_tamper.py",
    "test_labs.py",
    "test_grader_channels.py",
    "test_start_methods.py",
)
# `--dist loadfile` keeps a file's tests together on one worker (its module fixtures, such
# as a graded class or the labs' shared kernel, are built once), except in these files,
# whose tests share nothing: they are handed out one by one, last, so both workers end
# together.
SPREAD = ("test_start_methods.py",)


def pytest_collection_modifyitems(config, items) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike
        rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
        items.sort(
            key=lambda item: rank.get(item.path.name, len(rank) + (item.path.name in SPREAD))
        )


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: fine where xdist is not installed
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with the tests of the SPREAD files as units of their own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesButSpread(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return nodeid if Path(file).name in SPREAD else file

    return FilesButSpread(config, log)


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "serial: loads the whole machine on purpose (or measures it); run it alone, never "
        "beside other tests",
    )


def _settle(proc: subprocess.Popen, futures: dict[str, Future]) -> None:
    """Settle each chapter's future from ``python -m harness.selfcheck``'s JSON lines as
    soon as that chapter ends; whatever is left when the process ends gets its stderr."""
    errors = ThreadPoolExecutor(max_workers=1).submit(proc.stderr.read)
    for line in proc.stdout:
        report = json.loads(line)
        chapter = report["chapter"]
        if "error" in report:
            futures[chapter].set_exception(RuntimeError(f"selfcheck {chapter} {report['error']}"))
        else:
            futures[chapter].set_result(report)
    proc.wait()
    stderr = errors.result()[-4000:]
    for chapter, future in futures.items():
        if not future.done():
            future.set_exception(
                RuntimeError(f"selfcheck {chapter}: exited {proc.returncode}:\n{stderr}")
            )


@pytest.fixture(scope="session")
def selfcheck(request):
    """``selfcheck(chapter)`` -> the report of ``python -m harness.selfcheck chapter``.

    Every chapter the session's selected tests need is checked by one process, which
    forks a child per chapter (torch imported once), as many at a time as there are
    cores; waiting on the first chapter overlaps with the rest.
    """
    needed = []
    for item in request.session.items:
        chapter = getattr(item, "callspec", None) and item.callspec.params.get("chapter")
        if chapter and chapter not in needed:
            needed.append(chapter)
    futures = {chapter: Future() for chapter in needed}
    jobs = str(os.cpu_count() or 1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.selfcheck", *needed, "--jobs", jobs],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        start_new_session=True,  # its chapters' processes end with it, below
    )
    threading.Thread(target=_settle, args=(proc, futures), daemon=True).start()
    yield lambda chapter: futures[chapter].result(timeout=SELFCHECK_TIMEOUT_S)
    with contextlib.suppress(ProcessLookupError):  # a check still running serves no test now
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
