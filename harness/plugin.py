"""The course's pytest plugin: the ``--impl`` switch, the markers, seeding, short
"not implemented yet" reports and a per-task summary.

Loaded by the repository's root ``conftest.py`` and, in the grader's sandbox, with
``-p harness.plugin`` (where conftest files are switched off).
"""

from __future__ import annotations

import os
import random
from collections import defaultdict

import pytest

from harness import index, probe, target

NOT_GRADED_HERE = "not graded here: needs CUDA"
MESSAGE_LIMIT = 2000


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("course")
    group.addoption(
        "--impl",
        default="exercises",
        metavar="exercises|solutions|PATH",
        help="which implementation the chapter tests import: the student's exercises/ "
        "(default), the reference solutions/, or a folder shaped like exercises/",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "task(id): the course task a test grades, e.g. task('ch02.1')"
    )
    config.addinivalue_line("markers", "points(n): points the test is worth (default 1)")
    config.addinivalue_line(
        "markers", "cuda: needs a CUDA device; skipped and not graded elsewhere"
    )
    try:
        target.set_root(config.getoption("impl"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.pluginmanager.register(TaskSummary(), "course-task-summary")
    _set_threads()


def _set_threads() -> None:
    """One intra-op thread unless OMP_NUM_THREADS says otherwise.

    The course's tensors are tiny: extra threads only add scheduling noise, and on a
    busy 2-core machine (CI, a grader running two submissions) they slow small ops down
    by an order of magnitude. Results never depend on this setting.
    """
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("OMP_NUM_THREADS") or 1)))


def points_of(item: pytest.Item) -> int:
    marker = item.get_closest_marker("points")
    return int(marker.args[0]) if marker else 1


def task_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("task")
    return str(marker.args[0]) if marker else None


@pytest.fixture(autouse=True)
def _seed_everything():
    """Every test starts from the same random state, whatever ran before it."""
    import numpy as np
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    yield


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cuda"):
        import torch

        if not torch.cuda.is_available():
            pytest.skip(NOT_GRADED_HERE)
    marker = item.get_closest_marker("timeout")
    probe.current().begin_test(
        item.nodeid, float(marker.args[0]) if marker and marker.args else None
    )


def pytest_runtest_teardown(item: pytest.Item) -> None:
    probe.current().end_test()


def is_hidden(item: pytest.Item) -> bool:
    return "hidden" in item.path.parts


def property_only(message: str) -> str:
    """``message`` without pytest's assertion introspection, which can quote a test's
    expressions and inputs: the lines before the first ``assert ...``/``where ...`` line."""
    kept = []
    for line in message.splitlines():
        if line.lstrip().startswith(("assert ", "+ ", "- ", "where ")):
            break
        kept.append(line)
    return "\n".join(kept).strip() or (
        "a hidden test's property does not hold (its message was withheld)"
    )


def failure_category(exc: BaseException) -> str:
    """What kind of failure: todo, import, timeout, crash, tampering, raised (the
    student's code raised) or assert (a test's check did not hold)."""
    if isinstance(exc, NotImplementedError):
        return "todo"
    if isinstance(exc, target.TargetImportError):
        return "import"
    if isinstance(exc, probe.StudentTimeout):
        return "timeout"
    if isinstance(exc, probe.StudentCrashed):
        return "tampering" if exc.type_name == "Tampering" else "crash"
    if isinstance(exc, AssertionError) and not isinstance(exc, probe.StudentError):
        return "assert"
    return "raised"


def failure_message(excinfo: pytest.ExceptionInfo, hidden: bool = False) -> str:
    """The observed failure in the test's own words, without the test's source code.

    For hidden tests pytest's assertion introspection (``assert f(3, 4) == ...``, with
    the test's own expressions and inputs) is dropped: only the stated property remains.
    """
    exc = excinfo.value
    category = failure_category(exc)
    if category == "assert":
        text = str(exc) or "assertion failed"
        if hidden:
            text = property_only(text)
    elif category == "todo":
        text = f"TODO: implement {exc}"
    elif category in ("import", "timeout", "crash", "tampering"):
        text = str(exc)
    elif isinstance(exc, probe.StudentError):
        text = f"your code raised {exc.describe()}"
    else:
        text = excinfo.exconly()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    task_id = task_of(item)
    if task_id and (call.when == "call" or report.outcome != "passed"):
        report.user_properties.append(("task", task_id))
        report.user_properties.append(("points", points_of(item)))
    if report.failed and call.excinfo is not None:
        message = failure_message(call.excinfo, hidden=is_hidden(item))
        report.user_properties.append(("message", message))
        report.user_properties.append(("detail", failure_message(call.excinfo)))
        report.user_properties.append(("category", failure_category(call.excinfo.value)))
        if call.excinfo.errisinstance(
            (NotImplementedError, target.TargetImportError, probe.StudentError)
        ):
            # One line instead of a wall of traceback: the stub is simply not done yet, or
            # the student's code ran in another process (its traceback is not here).
            report.longrepr = message
    return report


def pytest_report_header(config: pytest.Config) -> str:
    return f"course target (--impl): {target.current_root()}"


class TaskSummary:
    """Collects outcomes per task and prints which tasks are done, with hints for the rest."""

    def __init__(self) -> None:
        self.results: dict[str | None, list[str]] = defaultdict(list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "task" in props and (report.when == "call" or report.outcome != "passed"):
            self.results[props["task"]].append(report.outcome)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        tr = terminalreporter
        tr.section("course tasks")
        for task_id in sorted(self.results, key=lambda t: (t is None, str(t))):
            outcomes = self.results[task_id]
            passed = outcomes.count("passed")
            graded = len(outcomes) - outcomes.count("skipped")
            try:
                task = index.task(task_id) if task_id else None
            except KeyError:
                task = None
            status = "done" if passed == graded else f"{passed}/{graded} tests pass"
            tr.write_line(f"{task_id or '(no task)':<9} {task.name if task else '?':<28} {status}")
            if task and passed < graded:
                tr.write_line(f"          hint: {task.hint}")
                tr.write_line(f"          read: {task.anchor}")
