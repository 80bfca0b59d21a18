"""The grader works wherever it is run, proves itself before it grades, and never turns
its own failure or a chapter that was not submitted into a student's grade.

Each test reproduces a way a new user met a false zero: a clone and its environment
under /tmp at a path with spaces, a sandbox that failed to start (and was then kept as
a grade), a grading machine that cannot run the reference, the student install without
the grader's packages, and chapters that were not submitted.
"""

from __future__ import annotations

import csv
import fcntl
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import grade, isolation, journal, preflight, run, score
from grader.sandbox import Limits
from harness import index
from harness.target import REPO
from tests.grader_data.helpers import (
    CH00_MAX,
    SOLUTION,
    STUB,
    readable_python_prefix,
    write_submission,
)

pytestmark = pytest.mark.timeout(900)
CH01_MAX = index.chapter("ch01").max_points


def clone_at(dest: Path) -> Path:
    """The repository's tracked files (and the working tree's versions of them) at
    ``dest``: a fresh clone, as a new user makes one."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    return dest


def venv_at(dest: Path) -> Path:
    """A virtual environment at ``dest`` that sees this one's packages (a ``.pth``), so
    ``sys.prefix`` is ``dest`` as after a fresh install there; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "course-packages.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python


def grader_env(tmp: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "GRADER_UID_BASE")}
    return env | {"HOME": str(tmp / "home"), "XDG_CACHE_HOME": str(tmp / "cache")} | extra


def grader(python: Path, cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), "-m", "grader", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=800,
    )


def table(path: Path) -> dict[str, dict[str, str]]:
    with open(path) as f:
        return {row["student"]: row for row in csv.DictReader(f)}


# ---- a fresh clone at an awkward path -------------------------------------------------


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    """A clone and a virtual environment under /tmp, both at paths with spaces."""
    base = tmp_path_factory.mktemp("new user")
    clone = clone_at(base / "my course clone")
    python = venv_at(base / "course env")
    return base, clone, python


def test_check_from_a_fresh_clone_under_tmp_scores_the_reference_in_full(awkward):
    """`grader check` from a clone whose environment lives under /tmp: the reference gets
    full marks and the stub zero (the private /tmp once hid, then broke, the sandbox)."""
    base, clone, python = awkward
    env = grader_env(base)
    done = grader(python, clone, env, "check", "ch00", "--impl", "solutions")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"ch00     {CH00_MAX} / {CH00_MAX}" in done.stdout, done.stdout[-2000:]
    stub = grader(python, clone, env, "check", "ch00")
    assert stub.returncode == 0, stub.stdout[-2000:] + stub.stderr[-2000:]
    assert f"ch00      0 / {CH00_MAX}" in stub.stdout
    assert "not implemented" in stub.stdout or "TODO" in stub.stdout


def test_grade_from_a_fresh_clone_under_tmp_tells_missing_chapters_apart(awkward):
    """`grader grade` at paths with spaces: the reference in full, a chapter that was not
    submitted is "not submitted" (and costs no sandbox), the run exits 0."""
    base, clone, python = awkward
    subs, out = base / "the submissions", base / "grades out"
    shutil.copytree(
        clone / "solutions", subs / "ada", ignore=shutil.ignore_patterns("ch0[2-9]*", "ch1*")
    )
    write_submission(subs, "ben", STUB)  # ch00 only: ch01 not submitted
    done = grader(
        python, clone, grader_env(base), "grade", str(subs), "--out", str(out),
        "--chapters", "ch00,ch01", "--jobs", "2", "--no-gradebook",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    grades, status = table(out / "grades.csv"), table(out / "grades_status.csv")
    assert grades["ada"]["total"] == str(CH00_MAX + CH01_MAX)
    assert grades["ben"]["ch01"] == "0" and status["ben"]["ch01"] == "not submitted"
    assert status["ada"]["ch01"] == status["ben"]["ch00"] == "graded"
    feedback = (out / "ben" / "feedback.md").read_text()
    assert "Not submitted: your submission has no ch01/shapes.py" in feedback
    summary = (out / "summary.md").read_text()
    assert "| not submitted | not graded |" in summary


def test_check_in_the_student_release_at_an_awkward_path(awkward):
    """The student release, built at a path with spaces and checked with an environment
    under /tmp: public tests only, full marks for finished work."""
    base, clone, python = awkward
    release = base / "my release"
    built = grader(python, clone, grader_env(base), "release", str(release))
    assert built.returncode == 0, built.stderr[-2000:]
    shutil.copyfile(
        clone / "solutions/ch00/training_loop.py", release / "exercises/ch00/training_loop.py"
    )
    done = grader(python, release, grader_env(base), "check", "ch00")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "no hidden tests here" in done.stderr
    assert re.search(r"ch00\s+(\d+) / \1\s", done.stdout), done.stdout[-1500:]


def test_a_chapter_not_submitted_starts_no_process():
    """Tests of a chapter whose module is absent are "not submitted" without any run."""

    class Spec:
        def __init__(self, nodeid):
            self.nodeid = nodeid

    chapters = [index.chapter("ch00"), index.chapter("ch01")]
    specs = [Spec(f"exercises/{c.id}/test_{c.module}.py::test_x") for c in chapters]
    records, facts = run.grade_submission({}, chapters, specs, Limits())
    assert facts["runs"] == 0, "a submission with no module must not start a test process"
    assert {r.outcome for r in records.values()} == {"not_submitted"}
    assert "no ch01/shapes.py" in records[specs[1].nodeid].message


# ---- the grader's failures are never the student's ------------------------------------


def test_a_sandbox_that_fails_to_start_is_not_graded_then_graded_on_the_next_run(tmp_path):
    """A failing sandbox: the preflight refuses (nothing graded, the cause named); with a
    proof in hand the tests it cuts read "not graded" (exit 3, never a zero, never kept
    as a grade), and the next run grades just those."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_submission(subs, "ada", SOLUTION)
    write_submission(subs, "bob", STUB)
    broken = grader_env(tmp_path, **{isolation.FAULT_ENV: "sandbox-setup"})
    args = ["grade", str(subs), "--out", str(out), "--chapters", "ch00", "--no-gradebook"]
    refused = grader(Path(sys.executable), REPO, broken, *args)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "cannot grade on this machine" in refused.stderr
    assert "could not start the process" in refused.stderr, refused.stderr[-2000:]
    assert not (out / "grades.csv").exists(), "a refused run must not write grades"

    proved = grader(
        Path(sys.executable), REPO, grader_env(tmp_path), "doctor", "--chapters", "ch00"
    )
    assert proved.returncode == 0, proved.stdout[-2000:] + proved.stderr[-2000:]
    assert f"scored {CH00_MAX}/{CH00_MAX}" in proved.stdout

    cut = grader(Path(sys.executable), REPO, broken, *args)
    assert cut.returncode == 3, cut.stderr[-3000:]
    assert "NOT GRADED" in cut.stderr
    status = table(out / "grades_status.csv")
    assert status["ada"]["ch00"] == status["bob"]["ch00"] == "not graded"
    shown = (out / "ada" / "results.json").read_text()
    assert "not graded" in shown and "not in your code" in shown

    again = grader(Path(sys.executable), REPO, grader_env(tmp_path), *args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "grading just those" in again.stderr
    grades = table(out / "grades.csv")
    assert grades["ada"]["total"] == str(CH00_MAX) and grades["bob"]["total"] == "0"
    assert table(out / "grades_status.csv")["ada"]["ch00"] == "graded"


def test_limits_that_break_the_reference_are_refused_not_graded(tmp_path):
    """An address-space limit too small for `import torch` fails the reference: the run
    refuses to grade and shows what failed, instead of giving every student zero."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write_submission(subs, "ada", SOLUTION)
    done = grader(
        Path(sys.executable), REPO, grader_env(tmp_path),
        "grade", str(subs), "--out", str(out), "--chapters", "ch00", "--no-gradebook",
        "--memory-mb", "64",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    assert "the reference solutions scored" in done.stderr, done.stderr[-3000:]
    assert "not full marks" in done.stderr and "What failed" in done.stderr
    assert not (out / "grades.csv").exists()


def test_the_journal_key_covers_the_environment(monkeypatch):
    """A saved grade is reused only under the same isolation mode and package versions."""
    chapters = [index.chapter("ch00")]
    env = preflight.environment()
    keys = {grade.make_plan(chapters, Limits()).key}
    for change in ({"isolation": "uid"}, {"packages": env["packages"] | {"torch": "9.9"}}):
        monkeypatch.setattr(preflight, "environment", lambda change=change: env | change)
        keys.add(grade.make_plan(chapters, Limits()).key)
    assert len(keys) == 3


# ---- the grader's own packages and permissions -----------------------------------------


def test_check_without_the_grader_packages_says_what_to_install(tmp_path):
    """After the student install (no hypothesis), `grader check` names the install command
    instead of failing every hidden test."""
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from grader import cli\n"
        "sys.exit(cli.main(['check', 'ch00']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=grader_env(tmp_path),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "hypothesis" in done.stdout and "pip install" in done.stdout
    assert ".[grader]" in done.stdout


def test_uid_mode_names_a_python_other_users_cannot_read(monkeypatch):
    """Without namespaces, student code runs as another user: a Python installation
    under a private folder is reported with the folder and its fix."""
    with tempfile.TemporaryDirectory() as tmp:  # directly under /tmp: others may enter
        os.chmod(tmp, 0o711)
        home = Path(tmp) / "home"
        python = home / "python" / "lib"
        python.mkdir(parents=True)
        home.chmod(0o700)
        monkeypatch.setattr(isolation, "host_paths", lambda: [Path("/usr"), python])
        problems = preflight.environment_problems([index.chapter("ch00")], "uid")
        assert len(problems) == 1, problems
        assert str(home) in problems[0] and "drwx------" in problems[0]
        assert f"chmod o+x {home}" in problems[0]
        home.chmod(0o711)
        assert preflight.environment_problems([index.chapter("ch00")], "uid") == []


def test_uid_mode_names_a_temporary_folder_other_users_cannot_enter(monkeypatch):
    """Without namespaces, each sandbox is a folder under TMPDIR that another user
    enters: a private TMPDIR (a pytest or cluster job's own folder) is named with its fix,
    before any grading, instead of the reference failing to import."""
    monkeypatch.setattr(isolation, "host_paths", lambda: [Path("/usr")])
    with tempfile.TemporaryDirectory() as tmp:  # directly under /tmp: others may enter
        os.chmod(tmp, 0o711)
        private = Path(tmp) / "job"
        (private / "tmp").mkdir(parents=True)
        private.chmod(0o700)
        monkeypatch.setenv("TMPDIR", str(private / "tmp"))
        monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
        problems = preflight.environment_problems([index.chapter("ch00")], "uid")
        assert len(problems) == 1 and "TMPDIR" in problems[0], problems
        assert f"chmod o+x {private}" in problems[0] and "drwx------" in problems[0]
        assert preflight.environment_problems([index.chapter("ch00")], "namespace") == []
        private.chmod(0o711)
        assert preflight.environment_problems([index.chapter("ch00")], "uid") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another, unprivileged user")
def test_check_as_a_normal_user_from_a_clone_in_their_home(tmp_path):
    """A self-learner who is not root: the grader runs in its weakest mode (their own
    user, limits) from a clone in their home folder, and grades the reference in full."""
    with tempfile.TemporaryDirectory() as top:
        os.chmod(top, 0o755)
        home = Path(top) / "home" / "learner"
        clone = clone_at(home / "course")
        for path in [home, *home.rglob("*")]:
            os.chown(path, 65534, 65534)
        user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        env = grader_env(home.parent) | {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
        done = subprocess.run(
            [*readable_python_prefix(), *user, sys.executable, "-m", "grader", "check", "ch00",
             "--impl", "solutions"],
            cwd=clone, env=env, capture_output=True, text=True, timeout=800,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"ch00     {CH00_MAX} / {CH00_MAX}" in done.stdout, done.stdout[-2000:]


def test_two_graders_proving_one_environment_at_once_run_the_reference_once(tmp_path, monkeypatch):
    """Two shards started together on one machine: the second waits for the first's proof
    and reads it from the cache instead of running the reference beside it."""
    chapters = [index.chapter("ch00")]
    specs = [score.TestSpec("t::a", "ch00", "a", "ch00.1", 1, False, False)]
    runs = []

    def reference_run(*args, **kwargs):
        runs.append(1)
        time.sleep(1.0)  # long enough for the second prover to arrive while it runs
        return {"t::a": run.Record("passed", "")}, {}

    monkeypatch.setattr(preflight, "environment_problems", lambda *a, **k: [])
    monkeypatch.setattr(run, "grade_submission", reference_run)
    cache = journal.Journal(tmp_path / "cache")

    def prove(_):
        return preflight.prove(chapters, specs, Limits(), "plan", tmp_path, cache)

    with ThreadPoolExecutor(2) as pool:
        proofs = list(pool.map(prove, range(2)))
    assert all(p.ok for p in proofs) and len(runs) == 1, (proofs, runs)
    assert sorted(p.cached for p in proofs) == [False, True]


def test_a_prover_stuck_on_the_lock_goes_on_by_itself_after_its_patience(tmp_path):
    (tmp_path / "meta").mkdir()
    with open(tmp_path / "meta" / "preflight-x.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another grader, stuck while proving
        start = time.monotonic()
        with preflight.one_prover(journal.Journal(tmp_path), "preflight-x", patience=0.5):
            waited = time.monotonic() - start
    assert 0.4 <= waited < 5, waited
