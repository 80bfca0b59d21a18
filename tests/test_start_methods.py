"""ch05's DataLoader workers under every multiprocessing start method (Linux has all
three): a correct loader passes under the platform's default, whatever it is — fork on
Linux before Python 3.14, forkserver from 3.14, spawn on macOS and Windows."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest

from harness import index
from harness.target import REPO

pytestmark = pytest.mark.timeout(1800)
# The platform's default is the one every other run of ch05 uses (its selfcheck in
# tests/test_chapters.py: stubs, solutions, bug zoo and alternatives), so only the others
# run here.
DEFAULT = multiprocessing.get_all_start_methods()[0]
OTHERS = [m for m in ("fork", "forkserver", "spawn") if m != DEFAULT]
CH05 = index.chapter("ch05")
PUBLIC = [str(CH05.public_tests.relative_to(REPO))]
EVERY = PUBLIC + ([str(CH05.hidden_tests.relative_to(REPO))] if CH05.hidden_tests.exists() else [])


def run(impl: str, method: str, files: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *files,
            "--impl",
            impl,
            "--start-method",
            method,
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


# What fork hides and the other two methods expose is the same: the dataset, collate_fn
# and worker_init_fn are pickled, and a worker holds no state of the test process. spawn
# adds only a fresh interpreter per worker (torch imported again, ~1.3 s each: ~90 s for
# the hidden tests here), so the hidden tests run under forkserver and the public ones,
# what a student on macOS or Windows runs, under spawn as well.
FILES = {"fork": EVERY, "forkserver": EVERY, "spawn": PUBLIC}


@pytest.mark.parametrize("method", OTHERS)
def test_ch05_passes_on_the_solutions_under_every_start_method(method):
    proc = run("solutions", method, FILES[method])
    assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.parametrize("method", [m for m in OTHERS if m != "forkserver"])
def test_ch05_public_tests_fail_on_the_stubs_under_every_start_method(method):
    """What a student on macOS or Windows (spawn) sees on an untouched stub. The hidden
    tests fail on the stubs in the selfcheck (default method); here under spawn they only
    started ~26 workers, each importing torch (~1.3 s) before the stub raised."""
    proc = run("exercises", method, PUBLIC)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 1 and " passed" not in last, proc.stdout[-4000:]
