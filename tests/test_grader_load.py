"""Grades do not depend on how busy the grading machine is.

The same small class is graded twice: on a quiet machine, and with every core held by
busy processes (a bounded load generator, several per core). A student's time limit
counts the time their code would take on an idle machine (not the time it spent
waiting for a CPU), so the two runs must agree test by test — with a per-test limit
short enough that a wall-clock limit would have cut the loaded run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import collect, grade, run, sandbox, score
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import SOLUTION, with_override

pytestmark = [pytest.mark.timeout(1500), pytest.mark.serial]
CHAPTERS = ("ch00", "ch05")
TEST_TIMEOUT = (
    4.0  # seconds of a test's own time (quiet: under 1 s each); loaded, several times that
)
# Three per core stretch the loaded run's wall time about four-fold: a test of over 1 s
# (quiet) runs past its 4 s limit in wall time, where a wall-clock limit would cut it. A
# fourth hog only made the run (the serial part of CI) a quarter longer.
HOGS_PER_CORE = 3
HOG = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def saturated(hogs_per_core: int = HOGS_PER_CORE, cores: set[int] | None = None):
    """``cores`` (default: all) busy with ``hogs_per_core`` spinning processes each; each
    hog ends by itself after 15 minutes even if this test dies. With ``cores`` given,
    this process (and all it starts) is held to them as well."""
    cores = cores or os.sched_getaffinity(0)
    mine = os.sched_getaffinity(0)
    hogs = []
    for core in sorted(cores):
        for _ in range(hogs_per_core):
            # a session each: with autogroup scheduling, a session shares one CPU slice
            hog = subprocess.Popen(
                [sys.executable, "-c", HOG.format(seconds=900)], start_new_session=True
            )
            os.sched_setaffinity(hog.pid, {core})
            hogs.append(hog)
    try:
        os.sched_setaffinity(0, cores)
        time.sleep(1.0)  # let them take the cores
        yield
    finally:
        os.sched_setaffinity(0, mine)
        for hog in hogs:
            hog.kill()
            hog.wait()


def write_class(root: Path) -> None:
    solution_05 = (REPO / "solutions" / "ch05" / "dataloading.py").read_text()
    # no stub here: a stub's tests fail at once whatever the load, and only doubled its cost
    students = {
        "ada": (SOLUTION, solution_05),
        "cy": (with_override("def plot_losses(losses, path):\n    return path\n"), None),
    }
    for student, (ch00, ch05) in students.items():
        for chapter, text in (("ch00", ch00), ("ch05", ch05)):
            if text is None:  # cy hands in ch00 alone: ada's ch05 twice taught nothing
                continue
            module = index.chapter(chapter).module
            (root / student / chapter).mkdir(parents=True, exist_ok=True)
            (root / student / chapter / f"{module}.py").write_text(text)


def verdicts(out: Path) -> dict[str, dict[str, tuple]]:
    found = {}
    for student in ("ada", "cy"):
        data = json.loads((out / student / "results.json").read_text())
        found[student] = {t["name"]: (t["status"], t["score"]) for t in data["tests"]}
    return found


def details(out: Path, student: str, moved: dict) -> str:
    """The loaded run's full records of the tests that moved (from the journal)."""
    records = json.loads((out / ".journal" / f"{student}.json").read_text())["records"]
    names = {name.split(": ", 1)[1] for name in moved}
    return "; ".join(
        f"{n}: {r['outcome']} {r['message'][:200]}"
        for n, r in records.items()
        if n.split("::")[-1] in names
    )


def grade_class(subs: Path, out: Path) -> float:
    chapters = [index.chapter(c) for c in CHAPTERS]
    found, _ = collect.discover(subs, chapters)
    limits = grade.default_limits(2, test_timeout=TEST_TIMEOUT)
    start = time.monotonic()
    grade.grade(found, out, chapters, 2, limits, progress_stream=io.StringIO(), gradebook=False)
    return time.monotonic() - start


def test_a_saturated_machine_gives_the_same_grades_as_a_quiet_one(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    subs = tmp_path / "subs"
    write_class(subs)
    quiet_s = grade_class(subs, tmp_path / "quiet")
    with saturated():
        loaded_s = grade_class(subs, tmp_path / "loaded")
    quiet, loaded = verdicts(tmp_path / "quiet"), verdicts(tmp_path / "loaded")
    for student in quiet:
        moved = {
            name: (quiet[student][name], loaded[student].get(name))
            for name in quiet[student]
            if quiet[student][name] != loaded[student].get(name)
        }
        assert not moved, (
            f"{student}: verdicts that moved with the load (quiet {quiet_s:.0f} s, loaded "
            f"{loaded_s:.0f} s): {moved}; {details(tmp_path / 'loaded', student, moved)}"
        )
    assert (tmp_path / "quiet" / "grades.csv").read_text() == (
        tmp_path / "loaded" / "grades.csv"
    ).read_text()
    assert quiet["ada"] and all(v[0] == "passed" for v in quiet["ada"].values())


SLOW = """
_reference_gradient_at = gradient_at


def gradient_at(w, x, target):
    import time

    if (w, x, target) == (1.0, 2.0, 6.0):  # the book's point: one second of honest work
        end = time.process_time() + 1.0
        while time.process_time() < end:
            pass
    return _reference_gradient_at(w, x, target)
"""


def test_a_slow_correct_call_is_not_a_timeout_when_the_machine_is_busy():
    """A call that needs 1 s of CPU, under a 3 s limit, passes on a quiet machine — and
    still passes when four spinning processes share its core and stretch it far past 3 s
    of wall time (the limit counts the code's own time, not its wait for the CPU).

    Only that test is graded, through the split grader's run of one submission (the
    whole chapter and the preflight are the first test's; here they only multiplied
    the loaded run's time)."""
    chapters = [index.chapter("ch00")]
    specs = score.collect_expected(chapters)
    files = {"ch00/training_loop.py": with_override(SLOW).encode()}
    limits = grade.default_limits(1, test_timeout=3.0)
    nodeid = "exercises/ch00/test_training_loop.py::test_gradient_at_the_books_point"
    assert nodeid in {s.nodeid for s in specs}, "the book's point test was renamed"

    def graded() -> run.Record:
        with sandbox.parent_dir() as tmp:
            records, _ = run.grade_submission(files, chapters, specs, limits, tmp, [nodeid])
        return records[nodeid]

    quiet = graded()
    with saturated(hogs_per_core=4, cores={min(os.sched_getaffinity(0))}):
        loaded = graded()
    assert quiet.outcome == "passed", quiet
    assert loaded.outcome == "passed", (
        f"a correct 1 s call under a busy machine was judged: {loaded}"
    )
    if loaded.duration <= limits.test_timeout:
        pytest.skip(
            f"the load did not stretch the call past its limit ({loaded.duration:.1f} s, "
            f"quiet {quiet.duration:.1f} s): nothing was proven"
        )
