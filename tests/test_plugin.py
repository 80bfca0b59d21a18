"""The course plugin seen from outside: the --impl switch, one-line TODO reports,
import problems reported per test, the cuda marker and the task summary."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from harness.plugin import NOT_GRADED_HERE, failure_message
from harness.target import REPO

CH00_TESTS = "exercises/ch00/test_training_loop.py"


def run_pytest(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_unknown_impl_is_a_clear_usage_error(tmp_path):
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path / "nowhere"))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "expected 'exercises', 'solutions' or a folder" in proc.stderr


def test_stub_failures_are_one_line_todos_and_the_summary_points_to_the_reading():
    proc = run_pytest(CH00_TESTS, "-k", "gradient_at_the_books_point")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "TODO: implement ch00.1 gradient_at — see course/ch00.md#one-gradient" in out
    assert "Traceback" not in out and "raise NotImplementedError" not in out, out
    assert "course tasks" in out and "read: course/ch00.md#one-gradient" in out, out


def test_impl_switch_selects_solutions_and_reports_the_target():
    proc = run_pytest(CH00_TESTS, "--impl", "solutions")
    assert proc.returncode == 0, proc.stdout
    assert f"course target (--impl): {REPO / 'solutions'}" in proc.stdout
    assert "ch00.1    gradient_at                  done" in proc.stdout


def test_a_submission_folder_with_broken_or_missing_modules_fails_per_test(tmp_path):
    broken = tmp_path / "broken" / "ch00"
    broken.mkdir(parents=True)
    (broken / "training_loop.py").write_text("def gradient_at(w, x, target):\n    return (\n")
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path / "broken"))
    assert proc.returncode == 1 and "error" not in proc.stdout.splitlines()[-1], proc.stdout
    assert "importing ch00/training_loop.py failed with SyntaxError" in proc.stdout

    (tmp_path / "empty").mkdir()
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path / "empty"))
    assert proc.returncode == 1, proc.stdout
    assert "ch00/training_loop.py not found under" in proc.stdout


def test_cuda_tests_are_skipped_as_not_graded_here_and_untagged_tests_stay_out_of_the_summary(
    tmp_path,
):
    (tmp_path / "test_gpu.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.cuda
            @pytest.mark.task("ch00.1")
            def test_needs_a_gpu():
                import torch
                assert torch.cuda.is_available()

            def test_untagged():
                pass
            """
        )
    )
    proc = run_pytest("-p", "harness.plugin", "-rs", str(tmp_path / "test_gpu.py"), cwd=tmp_path)
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        has_cuda = False
    if has_cuda:
        pytest.skip("CUDA present: the skip path is not exercised here")
    assert proc.returncode == 0, proc.stdout
    assert NOT_GRADED_HERE in proc.stdout and "1 passed, 1 skipped" in proc.stdout, proc.stdout
    assert "(no task)" not in proc.stdout


def _excinfo(exc: BaseException) -> pytest.ExceptionInfo:
    try:
        raise exc
    except BaseException:
        return pytest.ExceptionInfo.from_current()


def test_hidden_failure_messages_keep_the_property_and_drop_the_introspection():
    rewritten = AssertionError(
        "rows must sum to 1\nassert 0.5 == 1.0\n +  where 0.5 = attention(q, k, v)"
    )
    assert failure_message(_excinfo(rewritten), hidden=True) == "rows must sum to 1"
    assert "where 0.5 = attention" in failure_message(_excinfo(rewritten), hidden=False)
    bare = AssertionError("assert 0.5 == 1.0")
    assert "0.5" not in failure_message(_excinfo(bare), hidden=True)
    todo = NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")
    assert (
        failure_message(_excinfo(todo))
        == "TODO: implement ch00.1 gradient_at — see course/ch00.md#one-gradient"
    )


def test_assert_rewriting_is_kept_to_the_courses_own_modules(pytestconfig):
    """Libraries that ship a pytest plugin (hypothesis, anyio) are not assert-rewritten: where
    bytecode is not cached that re-parsed over a hundred of their modules on every run."""
    marked = getattr(pytestconfig.pluginmanager.rewrite_hook, "_must_rewrite", set())
    libraries = {"hypothesis", "anyio", "platformdirs", "_hypothesis_globals"}
    foreign = sorted(n for n in marked if n.split(".")[0] in libraries)
    assert not foreign, f"pytest would rewrite the asserts of {foreign} on import"
    assert pytestconfig.pluginmanager.is_blocked("anyio"), "the unused anyio plugin is off"


def test_pytests_log_capture_stays_off_torchs_trace_logger():
    """torch's structured-trace logger builds a JSON record per compile event whenever it has
    a handler; pytest's capture handlers on it cost ch09a ~2.5 s and would print in reports."""
    import logging

    import torch  # noqa: F401  (creates the logger)

    handlers = logging.getLogger("torch.__trace").handlers
    pytests = [h for h in handlers if type(h).__module__ == "_pytest.logging"]
    assert not pytests, f"pytest's handlers {pytests} are attached to torch.__trace"


def test_a_run_that_uses_no_hypothesis_never_imports_it(tmp_path):
    """hypothesis's own plugin imported hypothesis for its end-of-run summary even when no
    test had used it: ~0.2 s on every chapter run where the grader's extras are installed."""
    pytest.importorskip("hypothesis")
    (tmp_path / "conftest.py").write_text(
        textwrap.dedent(
            """
            import sys

            def pytest_unconfigure(config):
                print("hypothesis imported:", "hypothesis" in sys.modules)
            """
        )
    )
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
    (tmp_path / "test_property.py").write_text(
        textwrap.dedent(
            """
            from hypothesis import given, settings, strategies as st

            @settings(max_examples=3, database=None)
            @given(st.integers())
            def test_property(n):
                assert n == n
            """
        )
    )
    plain = run_pytest("-p", "harness.plugin", "-s", "test_plain.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stdout
    assert "hypothesis imported: False" in plain.stdout, plain.stdout
    used = run_pytest("-p", "harness.plugin", "-s", "test_property.py", cwd=tmp_path)
    assert used.returncode == 0 and "hypothesis imported: True" in used.stdout, used.stdout


def test_the_collector_pauses_for_imports_and_runs_for_the_tests(tmp_path):
    """Imports during collection run with the cyclic collector off (walking torch's new
    objects cost ~0.4 s of every run); every test runs with it on again."""
    (tmp_path / "test_gc_state.py").write_text(
        textwrap.dedent(
            """
            import gc

            AT_IMPORT = gc.isenabled()

            def test_state():
                print("at import:", AT_IMPORT, "in the test:", gc.isenabled())
            """
        )
    )
    proc = run_pytest("-p", "harness.plugin", "-s", "test_gc_state.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "at import: False in the test: True" in proc.stdout, proc.stdout
