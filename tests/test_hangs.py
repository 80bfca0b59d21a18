"""A call that hangs costs its own tests, and an ended process is told how it ended.

One submission, graded split as the grader does (short limits, one trusted process for
both chapters): ch01 is the reference but for a ``broadcast_shape`` that never returns
(tests call it from their bodies: the trusted side knows exactly which function hung);
ch00 is the reference but for a ``plot_losses`` that never returns (reached only through
probes: the probe's source says which function it calls) and a ``gradient_at`` that
ends its process with ``os._exit(3)`` at w == 1. Every other task must be graded as
the reference is, each hanging function may cost the test limit once, and every
later test that calls it fails at once, saying so.
"""

from __future__ import annotations

import re

import pytest

from grader import run, sandbox, score
from harness import index
from harness.target import REPO

pytestmark = pytest.mark.timeout(600)
LIMIT = 4.0
CHAPTERS = [index.chapter("ch00"), index.chapter("ch01")]
HANGING = {"ch00.4": "plot_losses", "ch01.1": "broadcast_shape"}

CH00 = (REPO / "solutions/ch00/training_loop.py").read_text() + (
    "\n\nimport os as _os\n"
    "_right = gradient_at\n\n\n"
    "def gradient_at(w, x, target):\n"
    "    if w == 1.0:\n"
    "        _os._exit(3)\n"
    "    return _right(w, x, target)\n\n\n"
    "def plot_losses(losses, path):\n"
    "    while True:\n"
    "        pass\n"
)
CH01 = (REPO / "solutions/ch01/shapes.py").read_text() + (
    "\n\ndef broadcast_shape(a, b):\n    while True:\n        pass\n"
)


def chosen(specs: list[score.TestSpec]) -> list[score.TestSpec]:
    """Every test of the tasks that hang or exit, and the first two of each other task in
    each phase (they run after the hang, in the process that replaced the hung one)."""
    kept, seen = [], {}
    for spec in specs:
        key = (spec.task, spec.hidden)
        seen[key] = seen.get(key, 0) + 1
        if spec.task in HANGING or spec.task == "ch00.1" or seen[key] <= 2:
            kept.append(spec)
    return kept


@pytest.fixture(scope="module")
def graded():
    specs = chosen(score.collect_expected(CHAPTERS))
    files = {"ch00/training_loop.py": CH00.encode(), "ch01/shapes.py": CH01.encode()}
    limits = sandbox.Limits(test_timeout=LIMIT, grace=5, wall=600, memory_mb=3072, nproc=48)
    with sandbox.parent_dir() as tmp:
        records, _ = run.grade_submission(
            files, CHAPTERS, specs, limits, tmp_root=tmp, only=[s.nodeid for s in specs]
        )
    return specs, records


def outcomes(graded, task: str) -> list[tuple[str, run.Record]]:
    specs, records = graded
    return [(s.nodeid, records[s.nodeid]) for s in specs if s.task == task]


OTHERS = [t.id for c in CHAPTERS for t in c.tasks if t.id not in HANGING and t.id != "ch00.1"]


@pytest.mark.parametrize("task", OTHERS)
def test_every_task_that_does_not_hang_is_graded_as_deserved(graded, task):
    """The reference's code, run after (and beside) a hang: each test passes, or fails
    for a reason of its own; never for the hang or a process that was not there."""
    got = outcomes(graded, task)
    assert got, f"no test of {task} was chosen"
    wrong = [
        f"{nodeid}: {r.outcome} {r.message[:200]}"
        for nodeid, r in got
        if r.category in ("timeout", "crash", "error") or re.search(r"hung|not run", r.message)
    ]
    assert not wrong, f"{task} paid for another task's hang:\n" + "\n".join(wrong)
    assert any(r.outcome == "passed" for _, r in got), f"{task}: nothing passed"


@pytest.mark.parametrize("task, function", sorted(HANGING.items()))
def test_a_function_that_hangs_costs_the_limit_once_and_is_named(graded, task, function):
    got = outcomes(graded, task)
    assert all(r.outcome != "passed" for _, r in got), f"{task}: a test passed a hang"
    limit_spent = [r for _, r in got if "did not return within" in r.message]
    refused = [r for _, r in got if re.search(rf"{function} hung earlier in this run", r.message)]
    starved = [r for _, r in got if r.outcome == run.NOT_GRADED]
    assert len(limit_spent) <= 1, (
        f"{task}: {len(limit_spent)} tests each waited out the limit on {function}; after the "
        "first, a test that calls it must fail at once"
    )
    assert len(limit_spent) + len(refused) + len(starved) == len(got), [
        r.message[:200] for _, r in got if r not in limit_spent + refused + starved
    ]
    if limit_spent:  # the process was asked where it was (faulthandler) before its kill
        message = limit_spent[0].message
        assert message.startswith(function) and f"stopped at {function}, line" in message
    assert refused, f"{task}: no test was refused for the earlier hang"


def test_a_process_that_exits_is_told_its_exit_status(graded):
    got = outcomes(graded, "ch00.1")
    ended = [r.message for _, r in got if r.outcome not in ("passed", run.NOT_GRADED)]
    assert ended, "no ch00.1 test called gradient_at at w == 1"
    for message in ended:
        assert "exited with status 3" in message and "signal" not in message, message
    assert any(r.outcome == "passed" for _, r in got), "the calls at other w were not graded"


@pytest.mark.parametrize(
    "code, said",
    [
        (0, "exited with status 0"),
        (3, "exited with status 3"),
        (137, "exited with status 137"),  # a status is its own (PID 1 passes signals on)
        (-9, "signal 9 (SIGKILL): out of memory"),
        (-11, "a crash in native code (signal 11"),
        (-6, "aborted (signal 6"),
        (-31, "signal 31, SIGSYS"),
        (-15, "signal 15 (SIGTERM)"),
        (None, "did not say"),
    ],
)
def test_how_a_process_ended_is_said_in_the_students_terms(code, said):
    from grader.verdict import how_it_ended

    assert said in how_it_ended(code)


# ---- which function a call reaches, and which one a dump shows --------------------------

PROBE_FILE = """
from harness.probe import probe
from harness.target import chapter_module

sh = chapter_module("ch01", "shapes")


def helper(a):
    return sh.pairwise_sq_dists(a, a)


@probe
def both(a, b):
    return sh.broadcast_shape(a, b), helper(a)


@probe
def by_name(name, *args):
    return getattr(sh, name)(*args)


@probe
def handed_on(a):
    return run_with(sh, a)


def run_with(module, a):
    return module.anything(a)
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    import importlib.util

    path = tmp_path_factory.mktemp("probes") / "test_probes.py"
    path.write_text(PROBE_FILE)
    spec = importlib.util.spec_from_file_location("_test_probes_for_calls", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_probes_reach_is_what_its_source_uses_on_the_handle(probes):
    from harness.calls import probe_reach

    assert probe_reach(probes.both.fn, ((1,), (2,))) == {"broadcast_shape", "pairwise_sq_dists"}
    assert probe_reach(probes.by_name.fn, ("is_view_of", 1, 2)) == {"is_view_of"}
    assert probe_reach(probes.by_name.fn, (3,)) is None, "a name that is not a string: unknown"
    assert probe_reach(probes.handed_on.fn, (1,)) is None, "the handle handed on: unknown"


SOURCE = """import torch


def _pad(shape, n):
    def inner(s):
        while True:
            pass
    return inner(shape)


def broadcast_shape(a, b):
    return _pad(a, 3)
"""


def dump(*frames: tuple[str, int, str], header: str = "Current thread 0x00007f01") -> str:
    lines = [f"{header} (most recent call first):"]
    lines += [f'  File "{file}", line {line} in {name}' for file, line, name in frames]
    return "\n".join(lines) + "\n"


SERVING = [
    ("/sandbox/harness/beside.py", 120, "handle"),
    ("/sandbox/harness/beside.py", 160, "serve"),
]


def test_a_dump_names_the_entry_the_tests_called_and_where_it_was():
    from harness.calls import entry_in_dump, last_dump

    impl = "/sandbox/impl/ch01/shapes.py"
    real = dump((impl, 6, "inner"), (impl, 8, "_pad"), (impl, 12, "broadcast_shape"), *SERVING)
    worker = dump(("/usr/lib/python3/threading.py", 300, "wait"), header="Thread 0x00007f02")
    log = "some print\n" + worker + "\n" + real
    assert entry_in_dump(last_dump(log), SOURCE, "ch01", "shapes") == (
        "broadcast_shape",
        "inner, line 6",
    )


def test_a_dump_is_read_through_the_graders_own_copy_of_the_source():
    """Names come from the source the trusted side read, never from the dump's words:
    a lying frame can say "in anything", its line decides."""
    from harness.calls import entry_in_dump, last_dump

    impl = "/sandbox/impl/ch01/shapes.py"
    fake = dump((impl, 12, "pairwise_sq_dists"), *SERVING)
    later = "printed by the student\n" + dump((impl, 12, "lies_here"), *SERVING)
    assert entry_in_dump(last_dump(fake + later), SOURCE, "ch01", "shapes") == (
        "broadcast_shape",
        "broadcast_shape, line 12",
    )
    assert entry_in_dump(dump(*SERVING), SOURCE, "ch01", "shapes") is None, "no frame of ours"
    assert entry_in_dump("", SOURCE, "ch01", "shapes") is None


def test_what_hung_is_refused_later_and_a_hidden_test_is_not_named_in_a_public_one():
    from harness.calls import Hangs

    hangs = Hangs()
    hidden = "grader/hidden/ch01/test_shapes_hidden.py::test_x"
    hangs.note("ch01", hidden, "broadcast_shape", "exercises/ch01/test_shapes.py::both", "")
    refusal = hangs.refusal("ch01", frozenset({"broadcast_shape"}), "", hidden_now=False)
    assert refusal.startswith("broadcast_shape hung earlier") and "in a hidden test" in refusal
    assert "test_x" in hangs.refusal("ch01", frozenset({"broadcast_shape"}), "", hidden_now=True)
    assert hangs.refusal("ch01", frozenset({"pairwise_sq_dists"}), "") == ""
    assert hangs.refusal("ch01", None, "") == "", "an unknown reach is not refused by name"
    assert "probe both hung" in hangs.refusal("ch01", None, "exercises/ch01/test_shapes.py::both")
    assert hangs.refusal("ch02", frozenset({"broadcast_shape"}), "") == "", "per chapter"
