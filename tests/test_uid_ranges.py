"""Two test sessions on one machine use sandbox-uid ranges of their own
(``tests/conftest.py``), so one never takes the other's sandboxes for its own leftovers."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.target import REPO
from tests.conftest import CLAIMED_BY_CONFTEST as CLAIM

SESSION = (
    "import sys, tests.conftest as c; print(c.os.environ['GRADER_UID_BASE'], flush=True); "
    "sys.stdin.read()"
)


def session_env(tmp_path) -> dict[str, str]:
    dropped = ("GRADER_UID_BASE", CLAIM, "PYTEST_XDIST_WORKER")  # as a session started by hand
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["TMPDIR"] = str(tmp_path)  # lock files of this test's own
    return env


def base_of_a_short_session(env) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SESSION],
        cwd=REPO,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip()


def test_a_second_session_takes_the_next_range_and_a_freed_one_is_reused(tmp_path):
    env = session_env(tmp_path)
    first = subprocess.Popen(
        [sys.executable, "-c", SESSION],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        held = first.stdout.readline().strip()
        beside = base_of_a_short_session(env)
    finally:
        first.stdin.close()
        first.wait(timeout=60)
    after = base_of_a_short_session(env)
    assert (held, beside, after) == ("63000", "64000", "63000")


def test_an_explicit_base_wins(tmp_path):
    env = {**session_env(tmp_path), "GRADER_UID_BASE": "70000"}
    assert base_of_a_short_session(env) == "70000"


def test_each_xdist_worker_claims_a_range_of_its_own(tmp_path):
    """A worker inherits the controller's claimed base (the controller imports this file
    too): it claims its own range; a base the user gave is still kept."""
    env = session_env(tmp_path)
    controller = subprocess.Popen(
        [sys.executable, "-c", SESSION], cwd=REPO, env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        held = controller.stdout.readline().strip()
        inherited = {**env, "GRADER_UID_BASE": held, CLAIM: held}
        worker = base_of_a_short_session({**inherited, "PYTEST_XDIST_WORKER": "gw0"})
        not_a_worker = base_of_a_short_session(inherited)
        chosen = {**env, "GRADER_UID_BASE": "70000", "PYTEST_XDIST_WORKER": "gw1"}
        users = base_of_a_short_session(chosen)
    finally:
        controller.stdin.close()
        controller.wait(timeout=60)
    assert (held, worker, not_a_worker, users) == ("63000", "64000", "63000", "70000")
