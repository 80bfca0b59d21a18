"""The course plugin seen from outside: the --impl switch, one-line TODO reports,
import problems reported once per chapter, the cuda marker, the task summary with the
tasks a failing one waits on, and hints in two levels."""

from __future__ import annotations

import os
import re
import subprocess
import textwrap

import pytest

from harness import index
from harness.plugin import NOT_GRADED_HERE, failure_message
from harness.target import REPO
from tests import warm_pytest

CH00_TESTS = "exercises/ch00/test_training_loop.py"


def run_pytest(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    return warm_pytest.run(["-p", "no:cacheprovider", *args], cwd=cwd, env=env, timeout=300)


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


def test_a_not_implemented_error_that_is_not_the_stubs_is_the_code_raising(tmp_path):
    """torch raises NotImplementedError for an op it has no kernel for (multi_margin_loss in
    bfloat16 on a CPU): a written task that meets one is failing, with torch's words, not
    "not started" with a TODO (held-out round 9: a correct alternative was told to
    implement the task it had implemented)."""
    solution = (REPO / "solutions" / "ch00" / "training_loop.py").read_text()
    (tmp_path / "ch00").mkdir()
    (tmp_path / "ch00" / "training_loop.py").write_text(
        solution + "\n\ndef gradient_at(w, x, target):\n"
        "    raise NotImplementedError(\"'multi_margin_loss_cpu_kernel' not implemented for "
        "'BFloat16'\")\n"
    )
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path), "-k", "gradient_at_the_books_point")
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "your code raised NotImplementedError: 'multi_margin_loss_cpu_kernel'" in out, out
    assert "TODO" not in out and "not started" not in out, out
    with pytest.raises(NotImplementedError) as stub:
        raise NotImplementedError("ch00.1 gradient_at — see course/ch00.md#one-gradient")
    assert failure_message(stub).startswith("TODO: implement ch00.1 gradient_at")


def test_impl_switch_selects_solutions_and_reports_the_target():
    proc = run_pytest(CH00_TESTS, "--impl", "solutions")
    assert proc.returncode == 0, proc.stdout
    assert f"course target (--impl): {REPO / 'solutions'}" in proc.stdout
    assert "ch00.1    gradient_at                  done" in proc.stdout


def test_a_module_that_does_not_import_is_reported_once_and_a_missing_one_per_test(tmp_path):
    broken = tmp_path / "broken" / "ch00"
    broken.mkdir(parents=True)
    (broken / "training_loop.py").write_text("def gradient_at(w, x, target):\n    return (\n")
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path / "broken"))
    assert proc.returncode == 1 and "error" not in proc.stdout.splitlines()[-1], proc.stdout
    # pytest's own short summary repeats each failure's first line, cut to the terminal's
    # width (which differs between machines), so count only in the plugin's own report
    report = proc.stdout.split("short test summary info")[0]
    said = report.count("importing ch00/training_loop.py failed with SyntaxError")
    assert said == 2, proc.stdout  # the first failure, and the task table's top line
    assert "not run: ch00/training_loop.py does not import (reported once, above)" in proc.stdout
    assert "not started" not in proc.stdout and "hint:" not in proc.stdout, proc.stdout

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


# ---- which task waits on which -------------------------------------------------------


def _states(*outcomes):
    return index.task_states(index.TestOutcome(*o) for o in outcomes)


def test_a_failing_task_is_blocked_by_the_first_task_in_trouble_it_relies_on():
    """ch10.8 relies on ch10.6, which relies on ch10.5, which relies on ch10.4: when all
    four fail, the three later ones wait on ch10.4, the root, not on their neighbour."""
    states = _states(
        ("ch10.4", "failed", "assert"),
        ("ch10.5", "failed", "assert"),
        ("ch10.6", "failed", "assert"),
        ("ch10.8", "failed", "assert"),
        ("ch10.8", "passed"),
        ("ch10.7", "failed", "assert"),  # relies on nothing: its own failure
    )
    assert states["ch10.4"].status == "failing" and states["ch10.7"].status == "failing"
    for later in ("ch10.5", "ch10.6", "ch10.8"):
        assert (states[later].status, states[later].blocker) == ("blocked", "ch10.4"), later
    assert states["ch10.8"].describe() == "blocked by ch10.4 CausalSelfAttention"
    assert states["ch10.8"].lead() == (
        "ch10.8 train_gpt depends on ch10.4 CausalSelfAttention, which fails its own tests "
        "— fix it first"
    )
    healthy = _states(("ch10.5", "passed"), ("ch10.8", "failed", "assert"))
    assert healthy["ch10.8"].status == "failing", "a task whose helpers pass fails on its own"


def test_a_task_that_only_calls_an_unwritten_one_is_blocked_not_unstarted():
    todo = "TODO: implement ch07.2 merge_heads — see course/ch07.md#merging-heads"
    states = _states(
        ("ch07.2", "failed", "todo", todo),
        ("ch07.6", "failed", "todo", todo),
        ("ch07.6", "failed", "assert"),
    )
    assert states["ch07.2"].status == "not started"
    assert states["ch07.6"].describe() == "blocked by ch07.2 merge_heads"
    assert "which is not written yet — write it first" in states["ch07.6"].lead()
    # two tasks it relies on in trouble: the one first in the course comes first
    also = _states(("ch07.2", "failed", "todo", todo), ("ch07.6", "failed", "todo", todo),
                   ("ch07.1", "failed", "assert"))  # fmt: skip
    assert also["ch07.6"].blocker == "ch07.1"
    # its own TODO: the task itself is not started, whatever else waits
    own = _states(("ch07.6", "failed", "todo", "TODO: implement ch07.6 MultiHeadSelfAttention"))
    assert own["ch07.6"].status == "not started"


def test_of_two_tasks_that_rely_on_each_other_the_later_waits_on_the_earlier(monkeypatch):
    """No two tasks of the course rely on each other today; should a chapter's tests come to
    (a test of the earlier task calling the later one), the later task is the one that waits."""
    mutual = {"ch07.4": ("ch07.5",), "ch07.5": ("ch07.4",)}
    monkeypatch.setattr(index, "relies_on", lambda task_id: mutual.get(task_id, ()))
    states = _states(("ch07.4", "failed", "assert"), ("ch07.5", "failed", "assert"))
    assert states["ch07.4"].status == "failing"
    assert (states["ch07.5"].status, states["ch07.5"].blocker) == ("blocked", "ch07.4")


def test_a_module_that_does_not_import_leaves_its_tasks_not_run():
    states = _states(("ch02.1", "failed", "import"), ("ch02.3", "failed", "import"))
    assert {s.describe() for s in states.values()} == {"not run: the module does not import"}


BLOCKED_TESTS = textwrap.dedent(
    """
    import pytest

    @pytest.mark.task("ch10.5")
    def test_block():
        assert False, "the block's output moved"

    @pytest.mark.task("ch10.8")
    def test_training():
        assert False, "the loss never fell"

    @pytest.mark.task("ch07.6")
    def test_heads():
        raise NotImplementedError("ch07.2 merge_heads — see course/ch07.md#x")

    @pytest.mark.task("ch07.2")
    def test_merge():
        raise NotImplementedError("ch07.2 merge_heads — see course/ch07.md#x")
    """
)


def test_a_blocked_tasks_failures_and_table_name_the_task_it_waits_on(tmp_path):
    (tmp_path / "test_blocked.py").write_text(BLOCKED_TESTS)
    proc = run_pytest("-p", "harness.plugin", "test_blocked.py", cwd=tmp_path)
    out = proc.stdout
    lead = "ch10.8 train_gpt depends on ch10.5 Block, which fails its own tests — fix it first"
    assert f"{lead}.\n\nthe loss never fell" in out, out
    assert re.search(r"ch10\.8 +train_gpt +blocked by ch10\.5 Block\n +first: ch10\.5", out), out
    assert re.search(r"ch07\.6 +MultiHeadSelfAttention +blocked by ch07\.2 merge_heads", out), out
    assert re.search(r"ch07\.2 +merge_heads +not started", out), out
    assert re.search(r"ch10\.5 +Block +0/1 tests pass\n +hint: ", out), out
    assert index.task("ch10.5").fix not in out and "pytest --hint-level 2" in out, out
    assert "developer tests" not in out, "a run given its tests is not the developer suite"


def test_found_by_the_test_at_names_the_test_file_from_the_repository_root(tmp_path):
    wrong = tmp_path / "wrong" / "ch00"
    wrong.mkdir(parents=True)
    (wrong / "training_loop.py").write_text(
        (REPO / "solutions" / "ch00" / "training_loop.py")
        .read_text()
        .replace("def gradient_at(", "def gradient_at(*_):\n    return 0.0\n\n\ndef _old(")
    )
    proc = run_pytest(CH00_TESTS, "--impl", str(tmp_path / "wrong"), "-k", "books_point")
    found = r"found by the test at:\n  exercises/ch00/test_training_loop\.py:\d+"
    assert re.search(found, proc.stdout), proc.stdout


def test_hint_level_two_adds_the_fix(tmp_path):
    (tmp_path / "test_blocked.py").write_text(BLOCKED_TESTS)
    fix = index.task("ch10.5").fix
    two = run_pytest("-p", "harness.plugin", "test_blocked.py", "--hint-level", "2", cwd=tmp_path)
    assert f"fix: {fix}" in two.stdout, two.stdout


def test_a_bare_pytest_says_it_runs_the_developer_tests_and_where_a_chapters_are(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\ntestpaths = suite\n")
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "test_x.py").write_text("def test_x():\n    pass\n")
    bare = run_pytest("-p", "harness.plugin", cwd=tmp_path).stdout
    assert "developer tests" in bare and "pytest exercises/ch02" in bare, bare
