"""Observations a submission cannot rewrite: graded through the split grader, a module
that replaces the names the probes measure with (counters, spies, comparisons, the
harness, builtins) scores no more than the same program left honest, and is told it
tampered.

One grading of a small class serves every assertion (only the students the selected
tests need are graded): a generic *patcher* (each chapter's stub plus import-time
replacements of torch, Dynamo, harness and builtin names) over all chapters, held to
the stubs' score, 0 in every chapter (tests/test_grader_degenerate.py proves that every
test fails on the stubs); and for ch02 and ch09a an honest wrong program beside the same program
with a trick:

- ch09a: a gate that still breaks the graph, with Dynamo's counters, the counting
  backend and ``explain`` replaced at import so that every compile reads as one graph;
- ch02: reachability read off ``torch.autograd.grad`` (what the task forbids), with the
  tests' "a backward pass ran" flag reset after it;
- ch02: cuts "found" by tracing the lines the function runs and reporting those whose
  comment marks the expected cut.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from grader import run, score
from grader.sandbox import Limits
from harness import index
from harness.target import NAMED_TARGETS, REPO

pytestmark = pytest.mark.timeout(1800)
CHAPTERS = list(index.chapters().values())


def stub(chapter: str, target: str = "exercises") -> str:
    """The chapter's module as ``target`` (the stubs, or "solutions") has it."""
    c = index.chapter(chapter)
    return (NAMED_TARGETS[target] / c.id / f"{c.module}.py").read_text()


# Appended to every chapter's stub: replace what the probes and the harness rely on.
PATCHER = """

# ---- replace names outside this module, at import ----
import builtins as _builtins
import sys as _sys
import types as _types

import torch as _torch

_torch.allclose = lambda *a, **k: True
_torch.equal = lambda *a, **k: True
_torch.testing.assert_close = lambda *a, **k: None
_isinstance, _len = _builtins.isinstance, _builtins.len
_builtins.isinstance = lambda obj, kinds: _isinstance(obj, kinds)
_builtins.len = lambda obj: _len(obj)
if "torch._dynamo" in _sys.modules:
    import torch._dynamo as _dynamo
    import torch._dynamo.testing as _dynamo_testing
    import torch._dynamo.utils as _dynamo_utils

    class _OneFrame(dict):
        def __getitem__(self, key):
            return {"ok": 1, "total": 1}

        def clear(self):
            pass

    class _OneGraph(_dynamo_testing.CompileCounterWithBackend):
        frame_count = property(lambda self: 1, lambda self, value: None)

    def _explain(fn, *args, **kwargs):
        return lambda *a, **k: _types.SimpleNamespace(
            graph_count=1, graph_break_count=0, break_reasons=[]
        )

    _dynamo_utils.counters = _OneFrame()
    _dynamo_testing.CompileCounterWithBackend = _OneGraph
    _dynamo.explain = _explain
for _name in ("harness.probe", "harness.wire"):
    _mod = _sys.modules.get(_name)
    if _mod is None:
        continue
    if hasattr(_mod, "readable"):
        _mod.readable = lambda result: result
    if hasattr(_mod, "encode"):
        _encode = _mod.encode

        def _always_ok(value, _encode=_encode):
            if _isinstance(value, dict) and value.get("ok") is False:
                value = {"ok": True, "value": None}
            return _encode(value)

        _mod.encode = _always_ok
"""

# ch09a: the gradient flows through the peak now, but print and the Python `if` still
# break the graph (the honest, unrepaired gate) ...
GATE_BREAKS = """

class NormalizedGate(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        peak = h.abs().amax()
        print(f"peak |activation| {float(peak):.3f}")
        if h.mean() > 0:
            gated = torch.relu(h)
        else:
            gated = -torch.relu(-h)
        return gated / peak
"""
# ... and the same with every compile made to read as one graph, one frame, no break.
COUNTERS_FORGED = """
import types as _types

import torch._dynamo as _dynamo
import torch._dynamo.testing as _dynamo_testing
import torch._dynamo.utils as _dynamo_utils


class _OneFrame(dict):
    def __getitem__(self, key):
        return {"ok": 1, "total": 1}

    def clear(self):
        pass


class _OneGraph(_dynamo_testing.CompileCounterWithBackend):
    frame_count = property(lambda self: 1, lambda self, value: None)


def _explain(fn, *args, **kwargs):
    return lambda *a, **k: _types.SimpleNamespace(
        graph_count=1, graph_break_count=0, break_reasons=[]
    )


_dynamo_utils.counters = _OneFrame()
_dynamo_testing.CompileCounterWithBackend = _OneGraph
_dynamo.explain = _explain
"""

# ch02: reachability read off a real backward pass (torch.autograd.grad), which the task
# exists to reject ...
GRAD_WALK = """

def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    found = {name: False for name, _ in pairs}
    if not loss.requires_grad:
        return found
    if loss.grad_fn is None:
        return {name: p is loss for name, p in pairs}
    wanted = [(name, p) for name, p in pairs if p.requires_grad]
    if wanted:
        grads = torch.autograd.grad(
            loss.sum(), [p for _, p in wanted], retain_graph=True, allow_unused=True
        )
        for (name, _), grad in zip(wanted, grads):
            found[name] = grad is not None
    _after_the_walk()
    return found


def _after_the_walk():
    pass
"""
# ... and the same, then telling the tests' spy that no backward pass ran.
SPY_RESET = """

def _after_the_walk():
    import sys

    for mod in list(sys.modules.values()):
        spy = getattr(mod, "BackwardSpy", None)
        if isinstance(spy, type):
            spy.ran = False
"""

# ch02: run the function and report no cut (honest, and wrong wherever a cut exists) ...
CUTS_NONE = """

def find_graph_cuts(fn, *args):
    fn(*args)
    return []
"""
# ... or report each line it ran whose comment marks a cut, named as the mark says.
CUTS_FROM_MARKS = """

def find_graph_cuts(fn, *args):
    import linecache
    import re
    import sys

    found = []

    def tracer(frame, event, arg):
        if event == "line":
            text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            mark = re.search(r"#\\s*cut:\\s*(\\w+)", text)
            if mark:
                cut = Cut(mark.group(1), f"{frame.f_code.co_filename}:{frame.f_lineno}")
                if not found or found[-1] != cut:
                    found.append(cut)
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return found
"""

# ch09: the reference with profile_top_ops in microseconds (a units error) ...
PROFILE_IN_US = """

def profile_top_ops(fn, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [OpStat(e.key, float(e.self_cpu_time_total), int(e.count)) for e in prof.key_averages()]
    rows.sort(key=lambda r: r.self_ms, reverse=True)
    return rows[: max(0, n)]
"""
# ... and the same with the watch blinded (its record dropped, as code written against the
# harness can do in its own process) and the clock the probes time with made 1000x slower.
CLOCK_BLINDED = """

import sys as _sys
import time as _time

_sys.modules["harness.probe"].current().watch.record = None
_real_clock = _time.perf_counter
_time.perf_counter = lambda: _real_clock() * 1000.0
"""


def class_list() -> dict[str, dict[str, str]]:
    """student -> {chapter: module text}."""
    students = {
        "patcher": {c.id: stub(c.id) + PATCHER for c in CHAPTERS},
        "gate_breaks": {"ch09a": stub("ch09a") + GATE_BREAKS},
        "gate_breaks_counters_forged": {"ch09a": stub("ch09a") + GATE_BREAKS + COUNTERS_FORGED},
        "grad_walk": {"ch02": stub("ch02") + GRAD_WALK},
        "grad_walk_spy_reset": {"ch02": stub("ch02") + GRAD_WALK + SPY_RESET},
        "cuts_none": {"ch02": stub("ch02") + CUTS_NONE},
        "cuts_from_marks": {"ch02": stub("ch02") + CUTS_FROM_MARKS},
        "profile_in_us": {"ch09": stub("ch09", "solutions") + PROFILE_IN_US},
        "profile_in_us_clock_blinded": {
            "ch09": stub("ch09", "solutions") + PROFILE_IN_US + CLOCK_BLINDED
        },
    }
    return students


# Which students each test needs (the rest are not graded when it runs alone).
NEEDS = {
    "patcher": ["patcher"],
    "ch09a": ["gate_breaks", "gate_breaks_counters_forged"],
    "backward_spy": ["grad_walk", "grad_walk_spy_reset"],
    "marked_lines": ["cuts_none", "cuts_from_marks"],
    "blinded_watch": ["profile_in_us", "profile_in_us_clock_blinded"],
}


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """student -> {chapter: (points, {test: message of each failed test})}."""
    wanted = {
        student
        for item in request.session.items
        if item.module is request.module
        for word, students in NEEDS.items()
        if word in item.name
        for student in students
    }
    tmp = tmp_path_factory.mktemp("tamper")
    chosen = {s: m for s, m in class_list().items() if s in wanted}
    chapters = sorted({c for modules in chosen.values() for c in modules})
    chapters = [c for c in CHAPTERS if c.id in chapters]
    specs = score.collect_expected(chapters)
    limits = Limits(test_timeout=60, grace=15, wall=900, threads=1)

    def grade(item):
        student, modules = item
        files = {f"{c}/{index.chapter(c).module}.py": text.encode() for c, text in modules.items()}
        records, _ = run.grade_submission(files, chapters, specs, limits, tmp_root=tmp)
        found = {}
        for spec in specs:
            record = records.get(spec.nodeid)
            if spec.chapter not in modules or record is None:
                continue
            points, failed = found.setdefault(spec.chapter, (0, {}))
            if record.outcome == "passed":
                found[spec.chapter] = (points + spec.points, failed)
            else:
                failed[spec.nodeid] = record.message
        return student, found

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(grade, chosen.items()))


def points(graded, student: str, chapter: str) -> int:
    return graded[student][chapter][0]


def messages(graded, student: str, chapter: str) -> str:
    return "\n".join(graded[student][chapter][1].values())


def test_the_patcher_scores_no_more_than_the_stub_in_any_chapter(graded):
    more = {c.id: points(graded, "patcher", c.id) for c in CHAPTERS}
    more = {chapter: got for chapter, got in more.items() if got > 0}
    assert not more, (
        f"chapter: points the patcher took where the stub takes 0, by replacing torch, Dynamo, "
        f"harness and builtin names at import: {more}. The probes' instruments must be bound before "
        "the student's module is imported (harness/beside.py loads the probe files first), "
        "and harness.probe.Watch must report the replacement as tampering"
    )


def test_the_patcher_is_told_it_tampered(graded):
    untold = [
        c.id for c in CHAPTERS if "tampering" not in messages(graded, "patcher", c.id).lower()
    ]
    assert not untold, (
        f"the patcher's failures in {untold} never say 'tampering': a replaced name must be "
        "reported as such (harness.probe.Watch, checked after the import and every call)"
    )
    said = messages(graded, "patcher", "ch09a")
    for name in ("torch.allclose", "builtins.isinstance"):
        assert name in said, f"the tampering report does not name {name}: {said[:600]}"


def test_forged_compile_counters_buy_nothing_in_ch09a(graded):
    honest = points(graded, "gate_breaks", "ch09a")
    forged = points(graded, "gate_breaks_counters_forged", "ch09a")
    assert forged <= honest, (
        f"ch09a: the unrepaired gate scored {honest}, and {forged} once its module replaced "
        "torch._dynamo.utils.counters, CompileCounterWithBackend and torch._dynamo.explain at "
        "import: the probes read compile counts from objects the student's module replaced "
        "(bind them before its import, and check after it that they are still the same)"
    )
    said = messages(graded, "gate_breaks_counters_forged", "ch09a")
    assert "torch._dynamo.utils.counters" in said, (
        f"the forged counters are not named in the feedback: {said[:600]}"
    )


def test_resetting_the_backward_spy_buys_nothing_in_ch02(graded):
    honest = points(graded, "grad_walk", "ch02")
    reset = points(graded, "grad_walk_spy_reset", "ch02")
    assert reset <= honest, (
        f"ch02: reachable_params built on torch.autograd.grad scored {honest}, and {reset} once "
        "it also reset the tests' BackwardSpy flag: whether a backward pass ran must not be a "
        "flag the student's code can reset (the spy now scales its k-th pass by k and the "
        "gradients are judged on the tests' side)"
    )
    said = messages(graded, "grad_walk", "ch02")
    assert "backward" in said, f"the backward pass through the graph went unreported: {said[:600]}"


def test_tracing_marked_lines_buys_nothing_in_ch02(graded):
    honest = points(graded, "cuts_none", "ch02")
    traced = points(graded, "cuts_from_marks", "ch02")
    assert traced <= honest, (
        f"ch02: find_graph_cuts that reports no cut scored {honest}, and {traced} by tracing the "
        "lines it ran and reporting those a comment marks as a cut: the programs handed to the "
        "student's function must carry no mark at the answer (the expected lines live in the "
        "test bodies)"
    )


def test_a_blinded_watch_and_a_slowed_clock_buy_nothing_in_ch09(graded):
    """What a probe times in the student's process is bounded by how long the whole call
    took, timed on the trusted side (``harness.probe.last_call_ms``)."""
    profile = ("test_profile_finds_the_matmul", "test_profile_ranks_by_time")
    for student in ("profile_in_us", "profile_in_us_clock_blinded"):
        failed = graded[student]["ch09"][1]
        passed = [t for t in profile if not any(t in nodeid for nodeid in failed)]
        assert not passed, (
            f"{student}: profile_top_ops in microseconds passed {passed}: with the watch blinded "
            "and time.perf_counter slowed 1000x in the student's process, the probe's own "
            "wall_ms grew with it; bound it by the call's time on the trusted side"
        )
        said = [m for nodeid, m in failed.items() if any(t in nodeid for t in profile)]
        assert all("add up to" in m and "tampering" not in m for m in said), (
            f"{student}: the profile tests must fail on the units (the blinding worked, so "
            f"no tampering is seen), not for another reason: {said}"
        )


def test_a_students_own_pytest_names_the_tampering(tmp_path):
    """In a student's one-process run a replaced name fails the tests as tampering too."""
    chapter = tmp_path / "ch00"
    chapter.mkdir()
    solution = (NAMED_TARGETS["solutions"] / "ch00" / "training_loop.py").read_text()
    (chapter / "training_loop.py").write_text(
        solution + "\nimport torch as _torch\n_torch.allclose = lambda *a, **k: True\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "exercises/ch00", "--impl", str(tmp_path), "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "tampering: torch.allclose" in proc.stdout, (
        "pytest exercises/ch00 on the solution plus `torch.allclose = ...` at import did not "
        f"fail with a tampering report (harness.probe.InProcess.inside):\n{proc.stdout[-1500:]}"
    )


PROBE_FILE = """
import json
import time

import torch


def clock():
    return time.perf_counter()


def optimizer(params):
    return torch.optim.SGD(params, lr=0.1)


def decoder():
    return (json
            .decoder.JSONDecoder)()
"""


def test_the_watch_covers_every_module_a_probe_reads_names_from(tmp_path, monkeypatch):
    """Not a fixed list: a probe that times with ``time.perf_counter`` or builds
    ``torch.optim.SGD`` relies on those modules' names, so replacing either is tampering."""
    import importlib.util
    import json
    import time

    import torch

    from harness import probe

    path = tmp_path / "test_some_probes.py"
    path.write_text(PROBE_FILE)
    spec = importlib.util.spec_from_file_location("course_probe_file_for_the_watch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[spec.name] = module  # as an imported test file is
    try:
        watch = probe.Watch()
        watch.start(extra=[module])
        assert watch.changes() == []
        monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
        monkeypatch.setattr(torch.optim, "SGD", object)
        monkeypatch.setattr(json.decoder, "JSONDecoder", object)
        changed = watch.changes()
        replaced = {"time.perf_counter", "torch.optim.SGD", "json.decoder.JSONDecoder"}
        assert replaced <= set(changed), (
            f"after replacing {sorted(replaced)} the watch saw only "
            f"{changed}: it must record the modules the probe files read names from "
            "(harness.probe.Watch)"
        )
        monkeypatch.undo()
        assert watch.changes() == []
    finally:
        del sys.modules[spec.name]
