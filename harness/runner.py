"""Run chapter tests in this process and return one ``Outcome`` per test.

Used by ``harness.selfcheck`` (the project's own proof that tests fail on stubs, pass
on solutions and reject every bug-zoo variant). Running in-process means ``import
torch`` is paid once for many runs.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

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


def _forget_test_modules() -> None:
    """Drop imported test modules so the next run imports them afresh."""
    repo = str(REPO)
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None) or ""
        if os.path.basename(file).startswith("test_") and repo in file:
            del sys.modules[name]


def run_tests(
    paths: list[Path],
    impl: str | Path,
    extra_args: list[str] = (),
    enough: Callable[[Outcome], bool] | None = None,
) -> list[Outcome]:
    """Run ``paths`` against ``impl`` quietly; return the outcome of every test run. Given
    ``enough``, the run stops after the first outcome for which it is true."""
    collector = _Collector(enough)
    # --tb=native: the messages are the harness's, and pytest's long form of a failure
    # parses the source of every frame (more than the tests of a failing stub cost)
    args = [*map(str, paths), "--impl", str(impl), "-q", "--tb=native", "-p", "no:cacheprovider"]
    args += extra_args
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[collector])
    _forget_test_modules()
    return collector.outcomes
