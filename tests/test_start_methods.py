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
FILES = [str(p.relative_to(REPO)) for p in (CH05.public_tests, CH05.hidden_tests) if p.exists()]


def run(impl: str, method: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *FILES,
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


@pytest.mark.parametrize("method", OTHERS)
def test_ch05_passes_on_the_solutions_under_every_start_method(method):
    proc = run("solutions", method)
    assert proc.returncode == 0, proc.stdout[-4000:]


@pytest.mark.parametrize("method", [m for m in OTHERS if m != "forkserver"])
def test_ch05_fails_on_the_stubs_under_every_start_method(method):
    proc = run("exercises", method)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 1 and " passed" not in last, proc.stdout[-4000:]
