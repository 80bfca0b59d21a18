"""Public tests for ch09a — run with `pytest exercises/ch09a` (add `--impl solutions` to
see the reference pass). Every compile uses the "eager" backend: Dynamo traces and
guards exactly as it would for inductor, but nothing is code-generated, so a test takes
a fraction of a second instead of ~20 s."""

import pytest
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import counters

from harness.target import chapter_module

comp = chapter_module("ch09a", "compilation")

BOOK_LENGTHS = [5, 8, 8, 11, 14, 17, 5, 20, 23, 26, 29, 32, 35]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts with an empty compile cache and zeroed counters (reset() alone
    does not clear torch._dynamo.utils.counters)."""
    torch.compiler.reset()
    counters.clear()
    yield
    torch.compiler.reset()
    counters.clear()


def book_requests(batch=1, vocab=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (batch, t), generator=g) for t in BOOK_LENGTHS]


def tagger(seed=0):
    torch.manual_seed(seed)
    return comp.CausalTagger().eval()


# ---------------------------------------------------------------- ch09a.1 compile_stats


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "dynamic, graphs, recompiles",
    [(False, 8, 7), (None, 2, 1), (True, 1, 0)],
    ids=["dynamic=False", "dynamic=None", "dynamic=True"],
)
def test_compile_stats_counts_the_books_thirteen_requests(dynamic, graphs, recompiles):
    model = tagger()
    calls = [(idx,) for idx in book_requests()]
    stats = comp.compile_stats(model, calls, dynamic=dynamic)
    seen = (stats.frames, stats.graphs, stats.recompiles, stats.graph_breaks)
    assert seen == (graphs, graphs, recompiles, 0), (
        f"compile_stats(tagger, 13 requests of lengths {BOOK_LENGTHS}, dynamic={dynamic}) gave "
        f"(frames, graphs, recompiles, graph_breaks) = {seen}, expected {(graphs, graphs, recompiles, 0)}: "
        "count graphs with a counting backend, frames with counters['frames']['ok'], and only "
        "successful compilations of an already-compiled frame as recompiles (with dynamic=False the "
        "9th attempt hits recompile_limit (8) and is not compiled at all)"
    )
    if recompiles:
        assert any("size mismatch" in r and "expected 5, actual 8" in r for r in stats.reasons), (
            f"the second request (T=8 after T=5) recompiles, but reasons={stats.reasons[:3]!r} holds no "
            "\"tensor 'idx' size mismatch at index 1. expected 5, actual 8\": read the guard failures "
            "Dynamo records (torch._dynamo.utils.guard_failures, or the 'recompiles' log)"
        )
    else:
        assert stats.reasons == [], (
            f"nothing recompiles with dynamic=True, yet reasons={stats.reasons[:3]!r}: report only this "
            "run's guard failures — reset Dynamo before compiling"
        )


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_compile_stats_sees_a_data_dependent_branch():
    def clip_or_shift(x):
        y = x * 2
        if y.sum() > 0:  # a Python `if` on a tensor value: Dynamo cannot trace through it
            return y.clamp(max=1.0)
        return y - 1

    x = torch.linspace(-1.0, 2.0, 6)
    stats = comp.compile_stats(clip_or_shift, [(x,), (x,)])
    assert (stats.graph_breaks, stats.graphs, stats.recompiles) == (1, 2, 0), (
        "compile_stats(fn with `if tensor.sum() > 0:`, the same input twice) gave "
        f"graph_breaks={stats.graph_breaks}, graphs={stats.graphs}, recompiles={stats.recompiles}; expected "
        "1, 2, 0: a data-dependent branch breaks the graph in two (Dynamo files it under "
        "counters['unimplemented'], not counters['graph_break']; torch._dynamo.explain counts it). "
        "The second graph is the resume function after the break, compiled on the first call: a "
        "recompile is a later compilation of a frame already compiled, not graphs - 1"
    )


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_compile_stats_counts_each_run_from_scratch():
    def scale(x):
        return torch.sin(x) * 3

    calls = [(torch.ones(3),), (torch.ones(4),), (torch.ones(4),)]
    first = comp.compile_stats(scale, calls, dynamic=False)
    second = comp.compile_stats(scale, calls, dynamic=False)
    assert (first.frames, first.graphs, first.recompiles) == (2, 2, 1), (
        f"compile_stats(sin(x)*3, lengths 3, 4, 4, dynamic=False) gave frames={first.frames}, "
        f"graphs={first.graphs}, recompiles={first.recompiles}; expected 2, 2, 1"
    )
    assert second[:4] == first[:4], (
        f"calling compile_stats twice on the same function gave {first[:4]} then {second[:4]}: the second run "
        "reused Dynamo's cache or counted the first run's counters — call torch.compiler.reset() first, "
        "and count counter differences (reset() does not clear torch._dynamo.utils.counters)"
    )


# ---------------------------------------------------------------- ch09a.2 serve (repair)


def served_with_counts(model, requests):
    counting = CompileCounterWithBackend("eager")
    before_ok, before_total = counters["frames"]["ok"], counters["frames"]["total"]
    outputs = comp.serve(model, requests, backend=counting)
    compiled = max(counting.frame_count, counters["frames"]["ok"] - before_ok)
    gave_up = (counters["frames"]["total"] - before_total) - (counters["frames"]["ok"] - before_ok)
    return outputs, compiled, gave_up


@pytest.mark.task("ch09a.2")
@pytest.mark.points(4)
def test_serve_the_books_requests_with_at_most_two_compilations():
    model, requests = tagger(), book_requests()
    outputs, compiled, gave_up = served_with_counts(model, requests)
    assert 1 <= compiled <= 2 and gave_up == 0, (
        f"serve(tagger, 13 requests of lengths {BOOK_LENGTHS}) compiled {compiled} graph(s) and gave up on "
        f"{gave_up} frame(s); expected 1 or 2 compilations and none abandoned: with dynamic=False every new "
        "length recompiles until recompile_limit (8), then the rest silently run eagerly — let T be dynamic"
    )
    assert len(outputs) == len(requests), f"serve returned {len(outputs)} outputs for 13 requests"
    with torch.no_grad():
        for k, (idx, out) in enumerate(zip(requests, outputs)):
            torch.testing.assert_close(
                out,
                model(idx),
                atol=1e-5,
                rtol=1e-5,
                msg=lambda m, k=k, t=idx.shape[1]: (
                    f"serve output {k} (T={t}) differs from eager: {m}. A repair may change how "
                    "the model is compiled (or pad on the right and slice back), never what it computes"
                ),
            )


# ---------------------------------------------------------------- ch09a.3 NormalizedGate (repair)


def gate_reference(gate, x):
    """The gate's intended maths, written out eagerly."""
    with torch.no_grad():
        h = x @ gate.lin.weight.T + gate.lin.bias
        kept = h.clamp(min=0) if h.mean() > 0 else h.clamp(max=0)
        return kept / h.abs().max()


def assert_one_graph(gate, x):
    report = torch._dynamo.explain(gate)(x)
    reasons = [str(getattr(r, "reason", r)).splitlines()[0] for r in report.break_reasons]
    assert report.graph_count == 1 and not report.break_reasons, (
        f"torch._dynamo.explain(NormalizedGate)(x) found {report.graph_count} graphs and "
        f"{len(reasons)} graph break(s): {reasons}. .item() and print() leave the graph, and a Python "
        "`if` on a tensor value is a data-dependent branch — keep values as tensors and choose with torch.where"
    )


@pytest.mark.task("ch09a.3")
@pytest.mark.points(2)
@pytest.mark.parametrize("bias", [2.0, -2.0], ids=["mean-positive", "mean-negative"])
def test_gate_compiles_to_one_graph_and_keeps_both_branches(bias):
    torch.manual_seed(3)
    gate = comp.NormalizedGate(8).eval()
    with torch.no_grad():
        gate.lin.bias.fill_(bias)
    x = torch.randn(8, 8)
    assert_one_graph(gate, x)
    with torch.no_grad():
        got = gate(x)
    torch.testing.assert_close(
        got,
        gate_reference(gate, x),
        atol=1e-6,
        rtol=1e-5,
        msg=lambda m: (
            f"NormalizedGate(x) with bias {bias} (batch mean {'>' if bias > 0 else '<'} 0) differs from the "
            f"gate's maths: {m}. The branch must still depend on the sign of the mean, and the division on "
            "the largest |activation| of the whole batch"
        ),
    )


# ---------------------------------------------------------------- ch09a.4 guard_reasons


def scale_by(x, n):
    return x * n + 1


@pytest.mark.task("ch09a.4")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "second, expected",
    [
        ((torch.ones(4, 5), 2), [("x", "shape")]),
        ((torch.ones(4, 4, dtype=torch.float64), 2), [("x", "dtype")]),
        ((torch.ones(4, 4), 3), [("n", "value")]),
    ],
    ids=["shape", "dtype", "python-int"],
)
def test_guard_reasons_names_the_argument_and_property(second, expected):
    got = comp.guard_reasons(
        scale_by, (torch.ones(4, 4), 2), second, backend="eager", dynamic=False
    )
    pairs = [(r.argument, r.kind) for r in got]
    assert pairs == expected, (
        f"guard_reasons(x * n + 1, first=(ones(4, 4), 2), second=({tuple(second[0].shape)} "
        f"{second[0].dtype}, {second[1]}), dynamic=False) gave {pairs}, expected {expected}: read the "
        "guard-failure text Dynamo recorded on the second call (\"tensor 'x' size mismatch ...\", "
        '"dtype mismatch", "n == 2") and name the argument it watched'
    )
    assert all(isinstance(r.text, str) and r.argument in r.text for r in got), (
        f"each GuardReason.text should be Dynamo's failure message, which names the argument; got {got}"
    )
