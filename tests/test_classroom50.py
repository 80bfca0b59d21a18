"""Classroom 50's declarative tests: one ``run`` test per task worth its public points,
after the setup command, within the documented schema and limits (Classroom 50 wiki,
Autograding-Basics "Fields"; ``schemas/tests-v1.schema.json``), timeouts that fit in
one 15-minute grading job, commands that pass on the solutions and fail on the stubs,
and an output whose first 2000 characters (all the release page keeps) hold the task's
state, the counts and the hint."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest

from grader import classroom50, score
from harness import index
from harness.target import REPO

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def specs():
    return score.collect_expected(list(index.chapters().values()))


@pytest.fixture(scope="module")
def written(specs, tmp_path_factory):
    out = tmp_path_factory.mktemp("c50")
    classroom50.write(out, list(index.chapters().values()), specs)
    return out


def test_one_file_per_chapter_one_test_per_task_with_its_public_points(written, specs):
    public = classroom50.public_points(specs)
    assert public, "no public points at all"
    for chapter in index.chapters().values():
        path = written / f"{chapter.id}.json"
        tasks = [t for t in chapter.tasks if public.get(t.id)]
        if not tasks:
            assert not path.exists()
            continue
        tests = json.loads(path.read_text())
        assert classroom50.problems(tests) == [], chapter.id
        setup, rest = tests[0], tests[1:]
        assert setup["name"] == "setup" and setup["type"] == "run" and setup["points"] == 0
        assert "-c constraints.txt" in setup["run"] and setup["run"].endswith("-e .")
        assert [t["name"].split()[0] for t in rest] == [t.id for t in tasks]
        for entry, task in zip(rest, tasks):
            assert entry["type"] == "run" and entry["points"] == public[task.id]
            assert entry["run"].split() == ["python", "-m", "grader.classroom50", task.id]
    # Every chapter in one job does not fit its 15 minutes: no combined file, and the
    # README says to register chapters one by one.
    combined = classroom50.tests_for(list(index.chapters().values()), specs)
    assert classroom50.job_problems(combined)
    assert not (written / "tests.json").exists()
    assert "register them per chapter" in (written / "README.md").read_text()


def test_each_chapters_timeouts_fit_in_one_grading_job(written):
    """The runner runs an assignment's tests one after another in a 15-minute job: the
    declared timeouts, the setup's included, add up to less than what the job leaves."""
    for path in written.glob("ch*.json"):
        tests = json.loads(path.read_text())
        budget = sum(t["timeout"] for t in tests)
        assert 0 < budget <= classroom50.JOB_SECONDS - classroom50.RUNNER_SECONDS, (path, budget)
        assert all(t["timeout"] >= classroom50.MIN_TASK_TIMEOUT for t in tests), path


def test_runtime_pins_the_python_of_the_lock_and_readme_says_advisory(written):
    runtime = json.loads((written / "runtime.json").read_text())
    assert set(runtime) <= {"runs-on", "python", "node", "java", "go", "rust", "apt", "container"}
    requires = (REPO / "pyproject.toml").read_text().split('requires-python = ">=')[1][:4]
    assert runtime["python"] == requires
    readme = (written / "README.md").read_text()
    assert "advisory" in readme and "grader grade" in readme and "--tests" in readme


VALID = [
    {"name": "setup", "type": "run", "run": "pip install -e .", "timeout": 300, "points": 0},
    {"name": "ch00.1 a", "type": "run", "run": "pytest", "timeout": 120, "points": 2},
    {"name": "io", "type": "io", "run": "./x", "expected": "hi", "comparison": "included"},
    {"name": "py", "type": "python", "run": "python -m pytest -q", "points": 1000},
]


def _broken(change) -> list:
    tests = copy.deepcopy(VALID)
    change(tests)
    return tests


@pytest.mark.parametrize(
    "change, words",
    [
        (
            lambda t: t.extend({"name": f"t{i}", "type": "run", "run": "x"} for i in range(97)),
            "100",
        ),
        (lambda t: t[1].update(name="é" * 51), "bytes"),  # 51 characters, 102 bytes
        (lambda t: t[1].update(name="tab\there"), "control"),
        (lambda t: t[1].update(name="py"), "unique"),
        (lambda t: t[1].update(name=""), "non-empty"),
        (lambda t: t[1].update(timeout=601), "timeout"),
        (lambda t: t[1].update(timeout=-1), "timeout"),
        (lambda t: t[1].update(timeout=2.5), "timeout"),
        (lambda t: t[1].update(points=1001), "points"),
        (lambda t: t[1].update(points=True), "points"),
        (lambda t: t[1].update(weight=1), "unknown"),
        (lambda t: t[1].pop("run"), "run is required"),
        (lambda t: t[1].update(run=""), "run must"),
        (lambda t: t[1].update(type="shell"), "type"),
        (lambda t: t[3].update({"exit-code": 1}), "exit-code"),
        (lambda t: t[1].update(expected="x"), "io tests"),
        (lambda t: t[2].pop("comparison"), "comparison"),
        (lambda t: t.reverse(), "setup"),
    ],
)
def test_the_validator_refuses_what_the_documented_schema_refuses(change, words):
    assert classroom50.problems(VALID) == []
    found = classroom50.problems(_broken(change))
    assert any(words in p for p in found), found


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda t: t[0].update(timeout=600) or t[1].update(timeout=300), "add up to"),
        (
            lambda t: t.extend(dict(t[1], name=f"n{i}", timeout=0) for i in range(60)),
            "add up to",
        ),
        (lambda t: t[1].update(timeout=5), "under"),
    ],
)
def test_timeouts_that_do_not_fit_in_one_job_are_refused(change, words):
    assert classroom50.job_problems(VALID) == []
    found = classroom50.job_problems(_broken(change))
    assert any(words in p for p in found), found


def test_names_of_exactly_100_bytes_and_100_tests_are_allowed():
    tests = copy.deepcopy(VALID)
    tests[1]["name"] = "é" * 50  # 100 bytes
    tests += [{"name": f"t{i}", "type": "run", "run": "x", "timeout": 1} for i in range(96)]
    assert len(tests) == 100 and classroom50.problems(tests) == []


def test_the_command_writes_only_the_chosen_chapters(tmp_path):
    assert classroom50.main(tmp_path, ["ch00"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "README.md",
        "ch00.json",
        "runtime.json",
        "tests.json",
    ]
    assert json.loads((tmp_path / "tests.json").read_text()) == json.loads(
        (tmp_path / "ch00.json").read_text()
    )


def test_ch00_task_commands_fail_on_the_stubs_and_pass_on_the_solutions(written):
    """What Classroom 50's runner does with a ``run`` test: the command in the checkout,
    passed when it exits 0."""
    tests = json.loads((written / "ch00.json").read_text())[1:]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": ""}

    def code(command: str, *extra) -> tuple[int, str]:
        args = command.split()
        assert args[0] == "python"
        proc = subprocess.run(
            [sys.executable, *args[1:], *extra],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return proc.returncode, proc.stdout

    on_stubs = {t["name"]: code(t["run"]) for t in tests}
    on_solutions = {t["name"]: code(t["run"], "--impl", "solutions") for t in tests}
    assert all(c == 1 for c, _ in on_stubs.values()), on_stubs
    assert all(c == 0 for c, _ in on_solutions.values()), on_solutions
    for name, (_, shown) in on_stubs.items():
        kept = shown[: classroom50.OUTPUT_KEPT]
        task = name.split()[0]
        assert kept.startswith(task) and "not started" in kept and "failed" in kept, kept


def test_the_summary_comes_first_in_what_the_release_page_keeps():
    """pytest prints the course plugin's task lines and the counts last; a long report of
    failures pushed them past the 2000 characters the page keeps."""
    failures = "\n".join(f"E   AssertionError: value {k} differs " + "x" * 60 for k in range(80))
    output = (
        "FFF [100%]\n=== FAILURES ===\n" + failures + "\n"
        "=================== course tasks ===================\n"
        "ch00.2    train_scalar                 1/3 tests pass\n"
        "          hint: THE-HINT\n"
        "          read: course/ch00.md#the-loop\n"
        "=========== short test summary info ===========\n"
        "FAILED a\n2 failed, 1 passed, 10 deselected in 0.54s\n"
    )
    kept = classroom50.summary_first(output, "ch00.2", 1)[: classroom50.OUTPUT_KEPT]
    assert kept.startswith("ch00.2    train_scalar                 1/3 tests pass")
    assert "hint: THE-HINT" in kept and "2 failed, 1 passed" in kept
    assert "value 0 differs" in kept  # the report follows
    # no summary at all (pytest could not start): the index's hint, when the task failed
    alone = classroom50.summary_first("ERROR: usage\n", "ch00.2", 4)
    assert alone.startswith("ch00.2 train_scalar") and index.task("ch00.2").hint in alone
