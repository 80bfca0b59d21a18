"""``python -m pytest ARGS`` as a student runs it, without paying ``import torch`` each time.

One server process (per test process) imports torch and pytest once; each ``run`` forks
it, and the fork runs ``pytest.main(ARGS)`` in the given folder with the given environment,
its output in files, as a fresh ``python -m pytest`` would: the server never ran pytest, so
each fork starts from clean plugin state, and ``sys.path`` starts with the folder and
``PYTHONPATH`` as it would. A variable torch reads when it is imported keeps the server's
value: a test about such a variable runs a real subprocess instead.

    proc = warm_pytest.run(["exercises/ch00", "-q"], env={**os.environ, "X": "1"})
    proc.returncode, proc.stdout, proc.stderr
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_server: subprocess.Popen | None = None
_lock = threading.Lock()


def _serve() -> None:
    """The server: one JSON request per line on stdin, one ``{"code": n}`` line back."""
    import pytest  # noqa: F401
    import torch

    # nothing else: pytest rewrites the asserts of the plugins it loads (harness.plugin,
    # hypothesis) as it imports them and warns about any imported already, and the harness
    # reads its target from the environment when it is imported
    torch.set_num_threads(1)
    base_path = list(sys.path[1:])
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = _child(request, base_path)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)


def _child(request: dict, base_path: list[str]) -> int:
    import pytest

    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [request["cwd"], *extra, *base_path]
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    try:
        return int(pytest.main(request["args"]))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _start() -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", "from tests import warm_pytest; warm_pytest._serve()"],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _stop() -> None:
    global _server
    if _server is not None:
        try:
            os.killpg(_server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _server.wait()
        _server = None


atexit.register(_stop)


def run(
    args: list[str], cwd: Path | str = REPO, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """What ``python -m pytest *args`` run in ``cwd`` with ``env`` would give: its exit
    code, stdout and stderr. Raises ``subprocess.TimeoutExpired`` past ``timeout``."""
    global _server
    with _lock, tempfile.TemporaryDirectory(prefix="warm-pytest-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        out.touch()
        err.touch()
        if _server is None or _server.poll() is not None:
            _server = _start()
        request = {
            "args": [str(a) for a in args],
            "cwd": str(cwd),
            "env": dict(os.environ if env is None else env),
            "stdout": str(out),
            "stderr": str(err),
        }
        _server.stdin.write(json.dumps(request) + "\n")
        _server.stdin.flush()
        answer: list[str] = []
        reader = threading.Thread(target=lambda: answer.append(_server.stdout.readline()))
        reader.start()
        reader.join(timeout)
        if not answer or not answer[0]:
            _stop()  # a hung run: the server and every fork go, the next run starts afresh
            reader.join()
            if not answer:
                raise subprocess.TimeoutExpired(["pytest", *args], timeout)
            raise RuntimeError("the warm pytest server ended without an answer")
        code = json.loads(answer[0])["code"]
        return subprocess.CompletedProcess(
            ["pytest", *args],
            code,
            out.read_text(errors="replace"),
            err.read_text(errors="replace"),
        )
