"""The student's loop, seen from outside: short failures that point at the student's
own lines, explanations that survive the student's code raising, hints that wait until
a task is started, and the same results whatever the multiprocessing start method."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from grader import grade
from harness.target import REPO
from tests import warm_pytest

pytest_plugins = ["pytester"]
STUB = (REPO / "exercises" / "ch00" / "training_loop.py").read_text()
SOLUTION = (REPO / "solutions" / "ch00" / "training_loop.py").read_text()


@pytest.fixture
def course(pytester):
    """A folder with one test file for ch00 and ``impl(code)`` to set the student's module."""
    pytester.makeini("[pytest]\n")

    def impl(code: str):
        folder = pytester.path / "impl" / "ch00"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "training_loop.py").write_text(code)
        return pytester.path / "impl"

    return impl


def run(pytester, *args):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = warm_pytest.run(
        ["-p", "harness.plugin", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        env=env,
        timeout=300,
    )
    return proc.stdout + proc.stderr


TESTS = textwrap.dedent(
    """
    import pytest
    import torch
    from harness.probe import because
    from harness.target import chapter_module

    tl = chapter_module("ch00", "training_loop")

    @pytest.mark.task("ch00.1")
    def test_plain_call():
        assert tl.gradient_at(1.0, 2.0, 6.0) == pytest.approx(-16.0), "gradient_at(1, 2, 6) should be -16"

    @pytest.mark.task("ch00.1")
    def test_explained_call():
        with because("the chain rule needs the residual x*w - target: look at how it is built"):
            tl.gradient_at(1.0, 2.0, 6.0)

    @pytest.mark.task("ch00.3")
    def test_big_comparison():
        got = torch.arange(10000.0).reshape(100, 100)
        assert torch.equal(got, got + 1) and got.sum() > 0, "the two 100x100 tensors differ everywhere"
    """
)

RAISES_DEEP_IN_TORCH = STUB.replace(
    '    raise NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")',
    "    import torch\n"
    "    import torch.nn.functional as F\n"
    "    ids = torch.tensor([int(x) + 7])\n"
    "    return F.embedding(ids, torch.zeros(3, 2)).sum().item()",
)


def test_a_raising_student_function_shows_its_own_line_not_torch_internals(pytester, course):
    pytester.makepyfile(test_loop=TESTS)
    out = run(
        pytester, "test_loop.py", "--impl", str(course(RAISES_DEEP_IN_TORCH)), "-k", "plain_call"
    )
    assert "your code raised IndexError" in out, out
    assert "ch00/training_loop.py:" in out and "F.embedding(ids" in out, out
    assert "def embedding" not in out and "torch/nn/functional.py" not in out, out
    assert len(out.splitlines()) < 60, out


def test_an_explanation_survives_the_students_code_raising(pytester, course):
    pytester.makepyfile(test_loop=TESTS)
    out = run(
        pytester, "test_loop.py", "--impl", str(course(RAISES_DEEP_IN_TORCH)), "-k", "explained"
    )
    assert "the chain rule needs the residual" in out, out
    assert "your code raised IndexError" in out, out


def test_long_tensor_comparisons_do_not_flood_the_report(pytester, course):
    pytester.makepyfile(test_loop=TESTS)
    out = run(pytester, "test_loop.py", "--impl", str(course(SOLUTION)), "-k", "big_comparison")
    assert "the two 100x100 tensors differ everywhere" in out, out
    assert len(out) < 4000, f"{len(out)} characters for one failure:\n{out[:3000]}"


def test_the_full_traceback_is_one_option_away(pytester, course):
    pytester.makepyfile(test_loop=TESTS)
    impl = str(course(RAISES_DEEP_IN_TORCH))
    out = run(pytester, "test_loop.py", "--impl", impl, "-k", "plain_call", "--tb=long")
    assert "torch/nn/functional.py" in out, out


def test_hints_wait_until_a_task_is_started(pytester, course):
    pytester.makepyfile(test_loop=TESTS)
    untouched = run(pytester, "test_loop.py", "--impl", str(course(STUB)), "-k", "plain_call")
    assert "not started" in untouched and "read: course/ch00.md#one-gradient" in untouched
    assert "hint:" not in untouched, untouched
    wrong = STUB.replace(
        '    raise NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")',
        "    return 0.0",
    )
    started = run(pytester, "test_loop.py", "--impl", str(course(wrong)), "-k", "plain_call")
    assert "hint:" in started, started


def test_a_repair_hint_waits_until_the_broken_program_is_changed(pytester):
    pytester.makeini("[pytest]\n")
    stub = (REPO / "exercises" / "ch02" / "autograd.py").read_text()
    folder = pytester.path / "impl" / "ch02"
    folder.mkdir(parents=True)
    pytester.makepyfile(
        test_repair=textwrap.dedent(
            """
            import pytest

            @pytest.mark.task("ch02.3")
            def test_w1_moves():
                assert False, "w1 never moved"
            """
        )
    )
    (folder / "autograd.py").write_text(stub)
    untouched = run(pytester, "test_repair.py", "--impl", str(pytester.path / "impl"))
    assert "not started" in untouched and "hint:" not in untouched, untouched
    (folder / "autograd.py").write_text(stub.replace("(w1 * x).detach()", "w1 * x"))
    changed = run(pytester, "test_repair.py", "--impl", str(pytester.path / "impl"))
    assert "hint:" in changed, changed


def test_the_grader_runs_one_torch_thread_per_job_whatever_the_cores():
    assert grade.default_limits(1).threads == 1
    assert grade.default_limits(2).threads == 1


def test_the_students_front_page_shows_the_self_check():
    text = (REPO / "course" / "README.md").read_text()
    assert "python -m grader check" in text


def test_the_students_pytest_runs_where_there_is_no_sigalrm():
    """Windows has no SIGALRM: the project's pytest settings must not force pytest-timeout's
    signal method there (it made every run an INTERNALERROR)."""
    code = (
        "import signal, sys\n"
        "del signal.SIGALRM  # as on Windows\n"
        "import pytest\n"
        "sys.exit(pytest.main(['exercises/ch01', '--impl', 'solutions', '-q',"
        " '-p', 'no:cacheprovider', '-k', 'broadcast']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0 and "passed" in proc.stdout, proc.stdout[-1500:]


def test_the_students_pytest_runs_under_a_locale_that_is_not_utf8():
    """Windows reads text files in its ANSI code page unless told otherwise; the course's
    files are UTF-8 (the ch10 corpus, the stubs the summary fingerprints). An ASCII locale
    with UTF-8 mode off stands in for it here."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "LC_ALL": "C",
        "LANG": "C",
        "PYTHONCOERCECLOCALE": "0",
        "PYTHONUTF8": "0",
    }
    base = [sys.executable, "-m", "pytest", "exercises/ch10", "-q", "-p", "no:cacheprovider"]
    solved = subprocess.run(
        [*base, "--impl", "solutions", "-k", "tokenizer"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    assert solved.returncode == 0 and "passed" in solved.stdout, solved.stdout[-1500:]
    stub = subprocess.run(base, cwd=REPO, capture_output=True, text=True, env=env)
    assert "UnicodeDecodeError" not in stub.stdout + stub.stderr, stub.stdout[-1500:]
    assert "TODO: implement" in stub.stdout, stub.stdout[-1500:]


def test_grader_checks_task_table_names_the_task_a_failing_one_waits_on():
    """`grader check` shows the same task states as the chapter's pytest run; a hidden
    test's shown text names no task, so its full message decides whose TODO it met."""
    from grader import check, score

    def result(task, status, category="", shown="", detail="", hidden=False):
        spec = score.TestSpec(f"x::{task}{status}{hidden}", "ch07", "t", task, 1, False, hidden)
        return score.TestResult(spec, status, 0, shown, detail or shown, category)

    todo = "TODO: implement ch07.2 merge_heads — see course/ch07.md#x"
    student = score.StudentResult("you", [
        result("ch07.2", "failed", "todo", todo),
        result("ch07.6", "failed", "todo", "heads — not implemented yet", todo, hidden=True),
        result("ch07.6", "failed", "assert", "weights differ"),
        result("ch07.1", "passed"),
        result("ch07.3", "not_graded", "", "not graded"),
    ])  # fmt: skip
    lines = check.task_table(check.task_states(student))
    assert any(re.fullmatch(r"ch07\.6 +MultiHeadSelfAttention +blocked by ch07\.2 merge_heads", ln)
               for ln in lines), lines  # fmt: skip
    assert any(re.fullmatch(r"ch07\.2 +merge_heads +not started \(TODO\)", ln) for ln in lines)
    assert any(re.fullmatch(r"ch07\.1 +split_heads +done", ln) for ln in lines), lines
    assert not any(ln.startswith("ch07.3") for ln in lines), "a test not graded decides nothing"
