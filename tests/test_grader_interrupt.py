"""Ctrl-C in the middle of ``grade``: it once printed a ``KeyboardInterrupt`` traceback,
two ``FileNotFoundError`` tracebacks, then "done" for students it never graded. Now it
says which students it finished (their results are kept) and which it did not, ends
every process it started, exits 130, and the same command grades just the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from grader import grade, journal
from harness.target import REPO
from tests.grader_data.helpers import STUB, write_submission

pytestmark = pytest.mark.timeout(900)
STUDENTS = ["ann", "bea", "cid", "dee"]


def _command(subs, out) -> list[str]:
    return [sys.executable, "-m", "grader", "grade", str(subs), "--out", str(out)] + [
        "--chapters",
        "ch00",
        "--jobs",
        "1",
    ]


def test_ctrl_c_says_who_was_finished_and_the_rerun_grades_the_rest(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in STUDENTS:
        write_submission(subs, name, STUB)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        _command(subs, out),
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a suite started in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: list[str] = []
    first = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("[1/"):
                first.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert first.wait(600), "".join(lines)
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=120)
    finally:
        proc.kill()
    reader.join(timeout=10)
    text = "".join(lines)
    assert code == grade.INTERRUPTED, text
    assert "Traceback" not in text, text
    said = text[text.index("interrupted:") :]
    kept = journal.Journal(out / ".journal").students()
    assert 1 <= len(kept) < len(STUDENTS), text
    assert f"interrupted: {len(kept)} submission(s) finished and kept ({', '.join(kept)})" in said
    rest = [s for s in STUDENTS if s not in kept]
    assert f"{len(rest)} not finished ({', '.join(rest)})" in said
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == len(kept) and "not graded" not in "".join(progress)

    again = subprocess.run(
        _command(subs, out), cwd=REPO, env=env, capture_output=True, text=True, timeout=850
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{len(kept)} submissions unchanged since the last run: reused" in again.stderr
    assert sorted(journal.Journal(out / ".journal").students()) == STUDENTS
