"""While a submission's test runs long, the progress lines say who and which test, so an
instructor watching a long run knows where it is (``grade.Progress``)."""

from __future__ import annotations

import io
import threading
import time

from grader import grade, sandbox


def test_a_long_test_is_named_with_its_student(monkeypatch):
    monkeypatch.setattr(grade.Progress, "LONG_S", 0.05)
    said = io.StringIO()
    progress = grade.Progress(2, 0, said)
    nodeid = "grader/hidden/ch01/test_shapes_hidden.py::test_slow"

    def grading(student: str, long: bool) -> None:
        with progress.grading(student):
            if long:  # what sandbox.run_once records while a test runs
                sandbox.RUNNING[threading.get_ident()] = (nodeid, time.monotonic())
            time.sleep(0.3)
            sandbox.RUNNING.pop(threading.get_ident(), None)

    threads = [
        threading.Thread(target=grading, args=("Zoë Åström", True)),
        threading.Thread(target=grading, args=("quick", False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    progress.close()
    lines = said.getvalue().splitlines()
    assert any("still grading Zoë Åström" in line and nodeid in line for line in lines), lines
    assert not any("quick" in line for line in lines), lines
