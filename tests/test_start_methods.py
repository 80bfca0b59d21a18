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


def run(impl: str, method: str, files: list[str], *extra: str) -> subprocess.CompletedProcess:
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
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


# What fork hides and the other two methods expose is the same: the dataset, collate_fn
# and worker_init_fn are pickled, and a worker holds no state of the test process; every
# run of the public tests already checks that pickling (test_make_loader_works_when_
# workers_are_spawned). spawn adds only a fresh interpreter per worker (torch imported
# again, ~1.3 s of CPU each: ~26 workers for the public tests, ~60 for all), forkserver a
# worker forked from a server that never ran the test, so under both one test per task
# that starts workers runs: the path a student on macOS or Windows (or on Python 3.14's
# Linux default) takes, without paying for it ~90 times. Where forkserver is the default,
# the selfcheck runs every test under it.
SPAWNED = (
    "test_pad_collate_lets_a_dataloader_batch_sequences",
    "test_each_worker_draws_different_augmentation",
    "test_make_loader_is_reproducible_and_workers_differ",
)
SELECTED = {
    "fork": (EVERY, ()),
    # forkserver's workers, like spawn's, are pickled into a process that never ran the
    # test (forked from a fresh server, not from the test): the same tests show it
    "forkserver": (PUBLIC, ("-k", " or ".join(SPAWNED))),
    "spawn": (PUBLIC, ("-k", " or ".join(SPAWNED))),
}


def summary(proc: subprocess.CompletedProcess, method: str, outcome: str) -> str:
    """pytest's last line; under spawn and forkserver it must count every chosen test as
    ``outcome`` (a renamed test would otherwise leave the -k choice silently smaller)."""
    last = proc.stdout.strip().splitlines()[-1]
    assert method == "fork" or f"{len(SPAWNED)} {outcome}" in last, proc.stdout[-2000:]
    return last


@pytest.mark.parametrize("method", OTHERS)
def test_ch05_passes_on_the_solutions_under_every_start_method(method):
    files, extra = SELECTED[method]
    proc = run("solutions", method, files, *extra)
    assert proc.returncode == 0, proc.stdout[-4000:]
    summary(proc, method, "passed")


@pytest.mark.parametrize("method", [m for m in OTHERS if m != "forkserver"])
def test_ch05_public_tests_fail_on_the_stubs_under_every_start_method(method):
    """What a student on macOS or Windows (spawn) sees on an untouched stub: the tests that
    start workers fail (the stub raises), none passes and none hangs. The hidden tests fail
    on the stubs in the selfcheck (default method)."""
    files, extra = SELECTED[method]
    proc = run("exercises", method, files, *extra)
    assert proc.returncode == 1, proc.stdout[-4000:]
    assert " passed" not in summary(proc, method, "failed"), proc.stdout[-4000:]
