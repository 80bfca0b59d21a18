"""What runs inside the sandbox: ONE pytest session over the chosen chapters' public and
hidden tests, streaming one signed JSON line per finished test to an inherited pipe.

This file is copied into each sandbox and run as a script (``python -E -s worker.py
CONFIG``), so it imports nothing from the grader. It first lowers its own resource
limits (student code cannot raise them again), reads a secret from stdin and closes
stdin, then runs pytest with conftest files, plugin autoload and the cache switched off.
The parent reads the pipe, not stdout; a line whose signature does not verify is ignored.

``python worker.py CONFIG --collect`` is the trusted variant the grader runs itself
(no student code): it lists the tests with their task, points and cuda markers.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import resource
import sys

LIMITS = {  # config key -> resource
    "memory_bytes": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "fsize_bytes": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
}


def lower_limits(config: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for key, res in LIMITS.items():
        value = config.get(key)
        if value:
            resource.setrlimit(res, (value, value))


class Channel:
    """Signed JSON lines to the parent over an inherited pipe (never stdout)."""

    def __init__(self, fd: int, key: bytes) -> None:
        self._fd = fd
        self._key = key
        self._seq = 0
        self._pid = os.getpid()

    def send(self, **event) -> None:
        if os.getpid() != self._pid:
            return  # a forked child of a test (a fork bomb, a DataLoader worker) never reports
        self._seq += 1
        event["seq"] = self._seq
        body = json.dumps(event, sort_keys=True)
        mac = hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
        data = (json.dumps({"body": body, "mac": mac}) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data) :]


def _message(report, props: dict) -> str:
    if props.get("message"):
        return str(props["message"])
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[-1])
    text = getattr(report, "longreprtext", "") or ""
    lines = [ln[2:] for ln in text.splitlines() if ln.startswith("E ")]
    return (lines[-1] if lines else text.strip().splitlines()[-1:] or [""])[0][:2000]


class Reporter:
    """pytest plugin: keep only the wanted tests and report each one when it finishes."""

    def __init__(self, channel: Channel, wanted: list[str] | None) -> None:
        self.channel = channel
        self.wanted = None if wanted is None else set(wanted)
        self.phases: dict[str, list] = {}

    def pytest_collection_modifyitems(self, session, config, items) -> None:
        if self.wanted is None:
            return
        keep = [item for item in items if item.nodeid in self.wanted]
        dropped = [item for item in items if item.nodeid not in self.wanted]
        items[:] = keep
        if dropped:
            config.hook.pytest_deselected(items=dropped)

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            text = report.longreprtext.strip().splitlines()
            self.channel.send(
                ev="collect_error", nodeid=report.nodeid, message="\n".join(text[-3:])
            )

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.phases[nodeid] = []
        self.channel.send(ev="start", nodeid=nodeid)

    def pytest_runtest_logreport(self, report) -> None:
        self.phases.setdefault(report.nodeid, []).append(report)

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        outcome, message, duration = "passed", "", 0.0
        for report in self.phases.pop(nodeid, []):
            duration += report.duration
            props = dict(report.user_properties)
            if report.failed and outcome in ("passed", "skipped"):
                outcome = "failed" if report.when == "call" else "error"
                message = _message(report, props)
            elif report.skipped and outcome == "passed":
                outcome, message = "skipped", _message(report, props)
        self.channel.send(
            ev="result", nodeid=nodeid, outcome=outcome, message=message, duration=duration
        )

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.channel.send(ev="done", exitstatus=int(exitstatus))


class Lister:
    """pytest plugin for the trusted collect-only run: the tests and their markers."""

    def __init__(self) -> None:
        self.tests: list[dict] = []
        self.errors: list[str] = []

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    def pytest_collection_finish(self, session) -> None:
        for item in session.items:
            task = item.get_closest_marker("task")
            points = item.get_closest_marker("points")
            self.tests.append(
                {
                    "nodeid": item.nodeid,
                    "name": item.name,
                    "task": str(task.args[0]) if task else None,
                    "points": int(points.args[0]) if points else 1,
                    "cuda": item.get_closest_marker("cuda") is not None,
                }
            )


def pytest_args(config: dict) -> list[str]:
    return [
        *config["test_files"],
        "--noconftest",
        "-p",
        "harness.plugin",
        "-p",
        "pytest_timeout",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:stepwise",
        "-c",
        config["ini"],
        "--rootdir",
        config["rootdir"],
        "--import-mode=importlib",
        "--impl",
        config["impl"],
        "-q",
        "--timeout",
        str(config.get("test_timeout", 60)),
        "--timeout-method",
        "signal",
    ]


def main(argv: list[str]) -> int:
    with open(argv[0]) as f:
        config = json.load(f)
    if "--collect" in argv:
        import pytest

        lister = Lister()
        code = pytest.main([*pytest_args(config), "--collect-only"], plugins=[lister])
        with open(config["collect_out"], "w") as f:
            json.dump({"tests": lister.tests, "errors": lister.errors, "exit": int(code)}, f)
        return 0

    lower_limits(config)
    key = sys.stdin.buffer.readline().strip()
    sys.stdin.close()
    os.close(0)
    os.open(os.devnull, os.O_RDONLY)  # fd 0 again, but empty
    sys.stdin = open(os.devnull)
    channel = Channel(int(config["fd"]), key)
    channel.send(ev="hello", pid=os.getpid())

    import torch

    torch.set_num_threads(int(config.get("threads", 1)))
    import pytest

    pytest.main(pytest_args(config), plugins=[Reporter(channel, config["tests"])])
    sys.stdout.flush()
    os._exit(0)  # skip atexit hooks a submission may have registered


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
