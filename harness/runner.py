"""Run chapter tests in this process and return one ``Outcome`` per test.

Used by ``harness.selfcheck`` (the project's own proof that tests fail on stubs, pass
on solutions and reject every bug-zoo variant). Running in-process means ``import
torch`` is paid once for many runs.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from harness import rewritten, target
from harness.target import REPO


@dataclass
class Outcome:
    nodeid: str
    outcome: str  # passed | failed | skipped | error
    task: str | None
    points: int
    message: str

    to_dict = asdict


MESSAGE_TAIL = 2000  # characters of a collection error kept


class _Collector:
    def __init__(self, enough: Callable[[Outcome], bool] | None = None) -> None:
        self.outcomes: list[Outcome] = []
        self.enough = enough
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.outcome == "passed":
            return  # a setup or teardown that passed says nothing about the test
        props = dict(report.user_properties)
        outcome = report.outcome
        if report.failed and report.when != "call":
            outcome = "error"
        message = props.get("message") or (
            str(report.longrepr[-1])
            if report.skipped and isinstance(report.longrepr, tuple)
            else ""
        )
        found = Outcome(
            report.nodeid, outcome, props.get("task"), int(props.get("points", 1)), message
        )
        self.outcomes.append(found)
        if self.enough is not None and self.enough(found):  # session: set at its start
            # shouldfail, not shouldstop: a stop is reported as an interruption, whose
            # long traceback pytest builds at a cost of a tenth of a second per run
            self.session.shouldfail = "the run has shown what it was asked to show"

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.outcomes.append(
                Outcome(report.nodeid, "error", None, 0, report.longreprtext[-MESSAGE_TAIL:])
            )


class _Touches:
    """Which names of the module under test each test reads (``record``): in its own
    setup, call and teardown, in every fixture it uses (wherever that fixture was first
    set up), at collection (a test module's globals count for each of its tests), and
    through a ``functools.cache``d helper of the test modules: a test its cache answered
    counts every name read by the tests during which that helper computed anything."""

    def __init__(self, record: dict[str, set[str]]) -> None:
        self.record = record
        self.log: list[str] = []
        self.fixtures: dict[str, set[str]] = {}
        self.collected: set[str] = set()
        self.cached: list = []  # the test modules' functools.cache wrappers
        self.calls: dict[str, tuple[set[int], set[int]]] = {}  # test -> (hit, computed)

    def pytest_sessionstart(self, session) -> None:
        target.TOUCHES = self.log

    def pytest_collection_finish(self, session) -> None:
        self.collected = set(self.log)
        found = {
            id(value): value
            for module in _test_modules()
            for value in vars(module).values()
            if isinstance(value, functools._lru_cache_wrapper)
        }
        self.cached = list(found.values())

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        start = len(self.log)
        try:
            return (yield)
        finally:
            self.fixtures.setdefault(fixturedef.argname, set()).update(self.log[start:])

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start, before = len(self.log), [w.cache_info() for w in self.cached]
        try:
            return (yield)
        finally:
            names = set(self.log[start:]) | self.collected
            for fixture in getattr(item, "fixturenames", ()):
                names |= self.fixtures.get(fixture, set())
            self.record[item.nodeid] = names
            after = [w.cache_info() for w in self.cached]
            hit = {i for i, (b, a) in enumerate(zip(before, after)) if a.hits > b.hits}
            computed = {i for i, (b, a) in enumerate(zip(before, after)) if a.misses > b.misses}
            self.calls[item.nodeid] = (hit, computed)

    def pytest_sessionfinish(self, session) -> None:
        target.TOUCHES = None
        read_by: dict[int, set[str]] = {}  # helper -> the names of the tests it computed in
        for nodeid, (_, computed) in self.calls.items():
            for i in computed:
                read_by.setdefault(i, set()).update(self.record[nodeid])
        for nodeid, (hit, _) in self.calls.items():
            for i in hit:
                self.record[nodeid] |= read_by.get(i, set())


def _test_modules() -> list:
    """The test modules of the repository imported now."""
    repo = str(REPO)
    return [
        mod
        for mod in list(sys.modules.values())
        if os.path.basename(getattr(mod, "__file__", None) or "").startswith("test_")
        and repo in (getattr(mod, "__file__", None) or "")
    ]


rewritten.keep()  # hundreds of runs import the same test files afresh


def _forget_test_modules() -> None:
    """Drop imported test modules so the next run imports them afresh."""
    forget = {id(mod) for mod in _test_modules()}
    for name, mod in list(sys.modules.items()):
        if id(mod) in forget:
            del sys.modules[name]


def run_tests(
    paths: list[Path],
    impl: str | Path,
    extra_args: list[str] = (),
    enough: Callable[[Outcome], bool] | None = None,
    record: dict[str, set[str]] | None = None,
) -> list[Outcome]:
    """Run ``paths`` (test files, or node ids under the repository) against ``impl``
    quietly; return the outcome of every test run. Given ``enough``, the run stops after
    the first outcome for which it is true; given ``record``, it maps each test's node id
    to the names of the module under test that the test reads (``_Touches``)."""
    collector = _Collector(enough)
    plugins = [collector] + ([_Touches(record)] if record is not None else [])
    # --tb=native: the messages are the harness's, and pytest's long form of a failure
    # parses the source of every frame (more than the tests of a failing stub cost)
    args = [*map(str, paths), "--impl", str(impl), "-q", "--tb=native", "-p", "no:cacheprovider"]
    args += extra_args
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=plugins)
    _forget_test_modules()
    return collector.outcomes
