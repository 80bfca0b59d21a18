"""The course's pytest plugin: the ``--impl`` switch, the markers, seeding, short
"not implemented yet" reports and a per-task summary.

Loaded by the repository's root ``conftest.py`` and, in the grader's sandbox, with
``-p harness.plugin`` (where conftest files are switched off).
"""

from __future__ import annotations

import gc
import os
import random
import re
import sys
from pathlib import Path

import pytest

# The cyclic collector stays off from here (torch is imported just below, through
# harness.probe) until collection has finished: see _end_import_pause.
gc.disable()

from harness import index, probe, target  # noqa: E402
from harness.index import NOT_GRADED_HERE  # noqa: E402

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
    group.addoption(
        "--task",
        metavar="chNN.K",
        help="run only the tests of this course task (a GitHub Classroom step grades one task)",
    )
    group.addoption(
        "--hint-level",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: a failing task's hint names the mechanism to look at (default); 2: also the "
        "fix itself (python -m grader hint chNN.K shows it for one task)",
    )
    group.addoption(
        "--start-method",
        choices=("fork", "spawn", "forkserver"),
        help="how worker processes (DataLoader workers) start: default, the platform's own",
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
    _leave_library_asserts_alone(config)
    method = config.getoption("start_method", None)
    if method:
        import multiprocessing

        multiprocessing.set_start_method(method, force=True)
        if method == "forkserver":  # workers fork from a server that imported torch once,
            multiprocessing.set_forkserver_preload(["torch"])  # not import it each


def _leave_library_asserts_alone(config: pytest.Config) -> None:
    """Keep pytest's assert rewriting to the course's own files.

    pytest marks every module of a distribution that ships a pytest plugin for rewriting:
    hypothesis, anyio and platformdirs, over a hundred modules. Where bytecode is not
    cached (``PYTHONDONTWRITEBYTECODE``, as in CI and grading containers) that costs ~0.9 s
    on every run, for asserts inside libraries whose introspection no test reads.
    """
    marked = getattr(getattr(config.pluginmanager, "rewrite_hook", None), "_must_rewrite", None)
    if isinstance(marked, set):  # pytest's private bookkeeping: skip quietly if it changes
        marked.intersection_update({n for n in marked if n.split(".")[0] == "harness"})


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
    if torch.cuda.is_available() or torch.backends.mps.is_available():
        torch.manual_seed(0)
    else:  # the CPU's generator alone: torch.manual_seed also queues a seed for each device
        torch.default_generator.manual_seed(0)  # kind, with a stack trace each (~1 ms)
    yield


def pytest_collection_finish(session: pytest.Session) -> None:
    _end_import_pause()
    transport = probe.current()
    if type(transport) is probe.InProcess:
        # The test files are imported, the student's module not yet (it loads on first
        # use): from here on every call into it is checked for replaced names.
        transport.watch.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    gc.enable()  # also when collection never finished


def _end_import_pause() -> None:
    """Freeze every object imported so far (torch, its compiler, sympy, the test modules)
    out of the cyclic collector's sight, then switch the collector back on for the tests.

    The collector is off from this plugin's import, just before torch's. Imports create
    millions of objects that live as long as the process, and every collection their
    allocations triggered walked all of them not yet frozen: ~0.16 s of ``import torch``
    and ~0.25 s of ``import torch._dynamo`` (paired runs); after them, full collections
    during ch09a's compiles walked them again (~0.7 s). Imports leave only a few thousand
    cycles behind, frozen with the rest; whatever the tests create is collected as usual.
    The grader imports torch and forks its student processes before pytest starts.
    """
    gc.freeze()
    gc.enable()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _skip_hypothesis_summary_if_unused(session.config)


def _skip_hypothesis_summary_if_unused(config: pytest.Config) -> None:
    """Unregister hypothesis's pytest plugin before the end-of-run summary if no test used it.

    That plugin's summary imports hypothesis (~0.2 s, most of it strategies) just to find
    that no test wrote anything. The grader's environment has hypothesis, so every chapter
    without property tests paid for it once per run. Runs before the summary: the terminal
    reporter writes it after every plain ``pytest_sessionfinish``.
    """
    plugin = config.pluginmanager.get_plugin("hypothesispytest")
    asked = config.getoption("hypothesis_show_statistics", False)
    if plugin is not None and "hypothesis" not in sys.modules and not asked:
        config.pluginmanager.unregister(plugin)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("task", None)
    if wanted:
        keep = [item for item in items if task_of(item) == wanted]
        dropped = [item for item in items if task_of(item) != wanted]
        items[:] = keep
        if dropped:
            config.hook.pytest_deselected(items=dropped)


# torch's structured-trace logger: it never propagates, is always at DEBUG, and builds a
# JSON record for every compile event whenever it has a handler. Its own handler removes
# itself on the first event when no trace was asked for (TORCH_TRACE).
TORCH_TRACE_LOGGER = "torch.__trace"


def _keep_log_capture_off_torch_trace() -> None:
    """Detach pytest's log-capture handlers from torch's structured-trace logger.

    pytest attaches its handlers to every non-propagating logger at each test phase, so
    under pytest every Dynamo compile built, serialised and captured a few dozen trace
    records that no test reads and a failure report would print: ch09a's ~110 compiles
    took ~2.5 s longer under pytest than outside it. Runs inside the logging plugin's
    wrappers (plain hooks run after every wrapper has started), before the test's code.
    """
    import logging

    logger = logging.root.manager.loggerDict.get(TORCH_TRACE_LOGGER)
    if isinstance(logger, logging.Logger):
        for handler in list(logger.handlers):
            if type(handler).__module__ == "_pytest.logging":
                logger.removeHandler(handler)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    _keep_log_capture_off_torch_trace()


def pytest_runtest_setup(item: pytest.Item) -> None:
    _keep_log_capture_off_torch_trace()
    if item.get_closest_marker("cuda"):
        import torch

        if not torch.cuda.is_available():
            pytest.skip(NOT_GRADED_HERE)
    marker = item.get_closest_marker("timeout")
    probe.current().begin_test(
        item.nodeid, float(marker.args[0]) if marker and marker.args else None
    )


def pytest_runtest_teardown(item: pytest.Item) -> None:
    _keep_log_capture_off_torch_trace()
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
    student's code raised), assert (a test's check did not hold) or not_graded (the
    grader's own failure: no verdict at all)."""
    if isinstance(exc, probe.NotGraded):
        return "not_graded"
    if isinstance(exc, NotImplementedError):
        return "todo" if is_stub_todo(exc) else "raised"
    if isinstance(exc, target.TargetImportError):
        return "import"
    if isinstance(exc, probe.StudentTimeout):
        return "timeout"
    if isinstance(exc, probe.StudentCrashed):
        return "tampering" if exc.type_name == "Tampering" else "crash"
    if isinstance(exc, AssertionError) and not isinstance(exc, probe.StudentError):
        return "assert"
    return "raised"


def _is_student_file(path: Path) -> bool:
    """A file of the implementation under test (the default root, exercises/, also holds
    the public tests: those are the course's)."""
    return path.is_relative_to(target.current_root()) and not path.name.startswith(
        ("test_", "conftest")
    )


def _raised_in_student_code(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if _is_student_file(Path(tb.tb_frame.f_code.co_filename)):
            return True
        tb = tb.tb_next
    return False


# The stub's own words ("ch02.3 reachable_params — see course/ch02.md#..."): every stub
# body raises with them. Any other NotImplementedError (an op torch has no kernel for in
# that dtype, a student's own placeholder) is the code raising, not an unwritten task.
STUB_TODO = re.compile(r"ch\d+[a-z]?\.\d+ ")


def is_stub_todo(exc: BaseException) -> bool:
    """Whether ``exc`` is a stub's "not implemented yet" (the task is not started)."""
    return isinstance(exc, NotImplementedError) and bool(STUB_TODO.match(_todo_text(exc)))


def _todo_text(exc: NotImplementedError) -> str:
    """The stub's own words, also when a DataLoader worker re-raised it with the worker's
    whole traceback as its message."""
    text = str(exc)
    marker = "NotImplementedError: "
    if "\n" in text and marker in text:
        return text.rsplit(marker, 1)[1].strip().splitlines()[0]
    return text


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
        text = f"TODO: implement {_todo_text(exc)}"
    elif category in ("import", "timeout", "crash", "tampering", "not_graded"):
        text = str(exc)
    elif isinstance(exc, probe.StudentError):
        text = f"your code raised {exc.describe()}"
    elif isinstance(exc, NotImplementedError):  # not the stub's: torch's, or the student's own
        text = f"your code raised NotImplementedError: {_todo_text(exc)}"
    elif _raised_in_student_code(exc):
        text = f"your code raised {probe.last_line(exc)}"
    else:
        text = excinfo.exconly()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " [...]"


def _frames(tb, keep) -> list[str]:
    """``file:line in function`` and the source line, for traceback entries ``keep`` picks."""
    import linecache

    lines = []
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if keep(path):
            where = f"{_shown_path(path)}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"
            source = linecache.getline(str(path), tb.tb_lineno).strip()
            lines.append(f"  {where}: {source}" if source else f"  {where}")
        tb = tb.tb_next
    return lines


def _shown_path(path: Path) -> str:
    """A path as the student types it: from the repository root (where pytest runs), else
    from the current folder, else from the implementation's root."""
    for base in (target.REPO, Path.cwd(), target.current_root()):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    return str(path)


def short_report(item: pytest.Item, excinfo: pytest.ExceptionInfo, message: str) -> str:
    """A student's view of a failure: the test's message, the student's own frames (the
    innermost last) and the test line that found it. ``--tb=long`` shows everything."""
    exc = excinfo.value
    stated = property_only(message)
    if stated != message and (len(message) - len(stated) > 600 or message.count("\n") > 14):
        message = stated + "\n(pytest's comparison details are long: --tb=long shows them)"
    mine = _frames(exc.__traceback__, _is_student_file)
    cause = exc.__cause__
    if not mine and cause is not None:
        mine = _frames(cause.__traceback__, _is_student_file)
    test_file = Path(str(item.path))
    at = _frames(exc.__traceback__, lambda p: p == test_file)[-1:]
    parts = [message]
    if mine:
        parts += ["", "in your code (innermost last):", *mine[-6:]]
    if at:
        parts += ["", "found by the test at:", *at]
    parts += ["", "(pytest --tb=long shows the whole traceback)"]
    return "\n".join(parts)


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
            (NotImplementedError, target.TargetImportError, probe.StudentError, probe.NotGraded)
        ):
            # One line instead of a wall of traceback: the stub is simply not done yet, or
            # the student's code ran in another process (its traceback is not here).
            report.longrepr = message
        elif task_id and item.config.getoption("tbstyle", "auto") == "auto":
            # a chapter's test: the student's view; the project's own tests keep pytest's
            report.longrepr = short_report(item, call.excinfo, message)
    return report


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"course target (--impl): {target.current_root()}"]
    testpaths = config.getini("testpaths")
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS and "exercises" not in testpaths:
        lines.append(
            f"no path given: this runs the course's own developer tests ({', '.join(testpaths)}: "
            "over a thousand, minutes). Working on a chapter? pytest exercises/ch02 (Ctrl-C "
            "stops this run)"
        )
    return lines


def _repair_started(task: index.Task) -> bool:
    """A repair task counts as started once its broken program was changed."""
    shipped = index.untouched().get(task.id)
    chapter = index.chapter(task.id.split(".")[0])
    path = target.module_path(chapter.id, chapter.module)
    if shipped is None or not path.is_file():
        return shipped is None
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # unreadable here: its tests' outcomes decide
    return index.definitions_digest(source, shipped["sites"]) != shipped["digest"]


class TaskSummary:
    """Collects outcomes per task and prints which tasks are done. A task not started
    yet (only TODOs) points to its section of the reading; the mechanism hint appears
    only once the task is implemented and still failing, so it never gives away what
    the reading asks the student to predict. A failing task that relies on another task in
    trouble is "blocked by" that one, and its failures say so first; a chapter module that
    does not import is reported once."""

    def __init__(self) -> None:
        self.outcomes: list[index.TestOutcome] = []
        self.failed: list[tuple[str, pytest.TestReport]] = []
        self.states: dict[str, index.TaskState] = {}
        self.import_error: dict[str, str] = {}  # chapter -> the first import failure's message

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "task" in props and (report.when == "call" or report.outcome != "passed"):
            category = str(props.get("category", ""))
            message = str(props.get("message", ""))
            self.outcomes.append(
                index.TestOutcome(props["task"], report.outcome, category, message)
            )
            if report.failed:
                self.failed.append((props["task"], report))
            if category == "import":
                self.import_error.setdefault(props["task"].split(".")[0], message)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Decide every task's state, then let each failure say first what it waits on (the
        terminal reporter prints failures after this hook). Nothing to do where nothing is
        printed (the grader's trusted side reports each test as it ends)."""
        if session.config.pluginmanager.get_plugin("terminalreporter") is None:
            return
        changed = {}
        for task_id in {o.task for o in self.outcomes}:
            try:
                task = index.task(task_id)
            except KeyError:
                continue
            if task.kind == "repair":
                changed[task_id] = _repair_started(task)
        self.states = index.task_states(self.outcomes, changed)
        shown_import: set[str] = set()
        for task_id, report in self.failed:
            props = dict(report.user_properties)
            chapter = task_id.split(".")[0]
            if props.get("category") == "import":
                if chapter in shown_import:
                    report.longrepr = (
                        f"not run: {_module_of(chapter)} does not import (reported once, above)"
                    )
                shown_import.add(chapter)
                continue
            state = self.states.get(task_id)
            if state is not None and state.status == "blocked":
                report.longrepr = f"{state.lead()}.\n\n{report.longrepr}"

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.outcomes:
            return
        tr = terminalreporter
        level = tr.config.getoption("hint_level", 1) or 1
        tr.section("course tasks")
        for chapter, message in self.import_error.items():
            tr.write_line(f"{_module_of(chapter)} does not import, so none of its tests ran:")
            tr.write_line(f"          {message}")
        hinted = False
        ids = sorted({o.task for o in self.outcomes}, key=index.task_key)
        for task_id in ids:
            state = self.states.get(task_id)
            try:
                task = index.task(task_id)
            except KeyError:
                task = None
            status = state.describe() if state else "?"
            tr.write_line(f"{task_id:<9} {task.name if task else '?':<28} {status}")
            if task is None or state is None or state.status in ("done", "not run"):
                continue
            if state.status == "blocked":
                first = index.task(state.blocker)
                why = "is not written yet" if state.blocker_unwritten else "fails its own tests"
                tr.write_line(f"          first: {first.id} {first.name} {why} ({first.anchor})")
                continue
            if state.status == "failing":
                tr.write_line(f"          hint: {task.hint}")
                hinted = True
                if level >= 2 and task.fix:
                    tr.write_line(f"          fix: {task.fix}")
            tr.write_line(f"          read: {task.anchor}")
        if hinted and level < 2:
            tr.write_line(
                "(the fix itself, if the hint is not enough: pytest --hint-level 2, or "
                "python -m grader hint chNN.K for one task)"
            )


def _module_of(chapter_id: str) -> str:
    try:
        return f"{chapter_id}/{index.chapter(chapter_id).module}.py"
    except KeyError:
        return f"the {chapter_id} module"
