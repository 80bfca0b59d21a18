"""Hidden tests for ch09a: other functions, lengths, batch sizes and guards than the public
ones, so a solution that only fits the public cases fails. Messages state the property."""

import collections
import importlib.util
import keyword
import random
import tempfile
from pathlib import Path

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import counters

from exercises.ch09a.test_compilation import (  # helpers shared with the public twin
    GraphLog,
    book_requests,
    check_gate,
    check_served,
    counted,
    fresh_dynamo,
    gate_maths,
    gate_seen,
    pairs,
    reason_triples,
    stats_of,
)
from harness import judge
from harness.layouts import LAYOUTS, laid_out
from harness.probe import because, probe
from harness.target import chapter_module

comp = chapter_module("ch09a", "compilation")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "Args CompileCounterWithBackend GraphLog HIDDEN_FUNCTIONS PairArgs Smoother SpyBackend "
    "book_requests "
    "break_then_branch break_then_return ends_in_a_helper starts_with_a_break breaks_inside_a_helper "
    "by_mode column_sums cosine_plus_one doubled fresh_dynamo ignores_z mix product reason_triples "
    "running_mean scaled times_n uses_flag odd_names _built"
)


def break_then_branch(x):
    y = x * 3
    torch._dynamo.graph_break()  # an explicit break
    if y.mean() > 0:  # data-dependent branch: leaves the graph again
        return y + 1
    return y - 1


def break_then_return(x):
    y = x * 2
    torch._dynamo.graph_break()  # the resume function holds no tensor op, so no graph
    return y


def ends_in_a_helper(x):
    return break_then_return(x)  # the break is the called function's last act


def starts_with_a_break(x):
    torch._dynamo.graph_break()  # a break before any tensor op of this frame
    return x + 1


def breaks_inside_a_helper(x):
    return starts_with_a_break(x.sin()) * 2  # a break nested in a called function


def mix(x, y):
    return (x @ y).relu()


def running_mean(x):
    return x.cumsum(1) / x.shape[1]


def times_n(x, n):
    return x * n


def cosine_plus_one(t):
    return t.cos() + 1


def column_sums(x):
    return x.sum(0)


def uses_flag(x, flag):
    return x.exp() if flag else x.log1p()


def by_mode(x, mode):
    return x + 1 if mode == "add" else x - 1


def scaled(x, s):
    return x * s


def product(x, y):
    return x * y


def ignores_z(x, z):
    return x + 1


def doubled(x):
    return x * 2


def odd_names(X_2, _scaleB):
    """Parameter names with a capital, a digit and underscores (a name is any identifier)."""
    return X_2 * _scaleB


HIDDEN_FUNCTIONS = {
    f.__name__: f
    for f in (
        break_then_branch,
        break_then_return,
        ends_in_a_helper,
        breaks_inside_a_helper,
        mix,
        running_mean,
        times_n,
        column_sums,
        uses_flag,
        by_mode,
        scaled,
        product,
        ignores_z,
        doubled,
        odd_names,
    )
}


Args = collections.namedtuple("Args", "x n")


class PairArgs(tuple):
    """A tuple subclass with nothing added: still a tuple of positional arguments."""


class SpyBackend:
    """A backend that counts the graphs it is handed and runs them as they are."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


@probe
def hidden_stats(name, calls, kwargs, warm=False, spy=False, one_shot=False, wrap=None):
    """compile_stats(fn, calls, **kwargs) from a fresh process state (after other compiles
    that leave counters and guard failures behind, when warm; with a counting backend of
    our own, when spy; the calls handed over as a generator, read once, when one_shot; each
    call made a namedtuple or a bare tuple subclass, when wrap):
    (CompileStats, graphs our backend saw or None)."""
    fresh_dynamo()
    if warm:
        earlier = torch.compile(cosine_plus_one, backend="eager", dynamic=False)
        for n in (2, 3):
            earlier(torch.ones(n))
        torch.compile(HIDDEN_FUNCTIONS[name], backend="eager", dynamic=False)(*calls[0])
    kwargs = {"backend": "eager", **dict(kwargs)}
    backend = SpyBackend() if spy else None
    if backend is not None:
        kwargs["backend"] = backend
    if wrap is not None:  # the items as tuple subclasses: a namedtuple or a bare subclass
        calls = [Args(*c) if wrap == "namedtuple" else PairArgs(c) for c in calls]
    inputs = (call for call in calls) if one_shot else calls
    stats = comp.compile_stats(HIDDEN_FUNCTIONS[name], inputs, **kwargs)
    return stats, (backend.graphs if backend is not None else None)


# ---------------------------------------------------------------- ch09a.1 compile_stats


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_each_piece_after_a_break_recompiles_on_its_own():
    """After a graph break each resume function is a frame of its own, which recompiles on its
    own when a guard fails."""
    stats, _ = hidden_stats(
        "break_then_branch", [torch.ones(3), torch.ones(5)], {"dynamic": False}
    )  # bare tensors are one-argument calls
    seen = (stats.frames, stats.graphs, stats.graph_breaks, stats.recompiles)
    assert seen == (6, 6, 2, 3) and len(stats.reasons) == 3, (
        "a function with an explicit graph break and a data-dependent branch, called on two lengths "
        "with dynamic=False, must show 2 graph breaks, and a recompile of the function and of each of "
        "its two resume frames (6 frames, 6 graphs, 3 recompiles), with one reason each; got (frames, "
        f"graphs, graph_breaks, recompiles) = {seen}, reasons={list(stats.reasons)[:3]}"
    )


@pytest.mark.task("ch09a.1")
def test_compile_stats_of_no_calls_is_all_zero():
    """With no calls nothing is compiled: every count is 0 (never negative) and no reason."""
    stats, _ = hidden_stats("column_sums", [], {})
    assert tuple(stats) == (0, 0, 0, 0, []), (
        f"compile_stats(fn, []) returned {tuple(stats)}: with no call nothing compiles, so "
        "frames, graphs, graph breaks and recompiles are all 0 and there is no guard reason"
    )


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_compile_stats_frames_are_not_graphs():
    """A frame can compile without handing the backend a graph: frames, graphs and breaks are
    counted apart (frames from counters['frames']['ok'], graphs at the backend, breaks as
    explain counts them on the first input), also for a break at the end of a function and a
    break inside a called function."""
    cases = {  # name, calls: (frames, graphs, graph_breaks, recompiles), as explain counts breaks
        "break_then_return": ([torch.ones(3), torch.ones(4)], (3, 2, 0, 1)),
        "ends_in_a_helper": ([torch.ones(3)], (3, 1, 0, 0)),
        "breaks_inside_a_helper": ([torch.ones(3)], (4, 3, 2, 0)),
    }
    what = {
        "break_then_return": "a function that breaks the graph after its only tensor op, called on two "
        "lengths with dynamic=False (the function and an empty resume frame on the first call, then "
        "a recompile of the function)",
        "ends_in_a_helper": "a function whose called function breaks the graph after its only tensor op "
        "(the caller, the callee and the callee's empty resume frame compile; one graph)",
        "breaks_inside_a_helper": "a function that calls, between two tensor ops, a function that breaks "
        "the graph before its own tensor op (4 frames, 3 graphs: the caller's op, the callee's, then "
        "the caller's resume)",
    }
    for name, (calls, expected) in cases.items():
        stats, _ = hidden_stats(name, calls, {"dynamic": False})
        seen = (stats.frames, stats.graphs, stats.graph_breaks, stats.recompiles)
        assert seen == expected, (
            f"{what[name]}: expected (frames, graphs, graph_breaks, recompiles) = {expected}, got "
            f"{seen}. Frames come from Dynamo's frame counter and graphs from the backend; graph_breaks "
            "is what explain reports on the first input, and explain counts the graphs that call "
            "produced, not its frames or its break messages: an empty resume frame after a break at "
            "the end of a function adds no break, and a break nested in a called function splits it "
            "into pieces of their own"
        )


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_compile_stats_a_new_branch_is_not_a_recompile():
    """A branch taken for the first time compiles a new resume frame: a new frame, not a
    recompile, and no guard failed."""
    up, down = torch.linspace(-1.0, 2.0, 6), -torch.linspace(-1.0, 2.0, 6)
    (stats,) = stats_of("clip_or_shift", [(up,), (down,), (up,)], {})
    seen = counted(stats)
    assert seen == (3, 3, 0, 1) and list(stats.reasons) == [], (
        "compile_stats(fn with `if y.sum() > 0:`, a positive, a negative, a positive input) must count "
        "3 frames and 3 graphs (the function, then one resume function per branch, each compiled "
        "the first time it runs), 0 recompiles and no reasons; got (frames, graphs, recompiles, "
        f"graph_breaks) = {seen}, reasons={list(stats.reasons)[:2]}: a recompile is a new "
        "compilation of a frame already compiled, caused by a failed guard"
    )


@pytest.mark.task("ch09a.1")
def test_counts_ignore_what_was_compiled_before():
    """Counts, recompiles and reasons cover only this call's run, whatever was compiled earlier
    in the process."""
    calls = [
        (torch.ones(4, 4), torch.ones(4, 4)),
        (torch.ones(4, 4, dtype=torch.float64), torch.ones(4, 4, dtype=torch.float64)),
        (torch.ones(4, 4), torch.ones(4, 4)),
    ]
    stats, _ = hidden_stats("mix", calls, {"dynamic": False}, warm=True)
    assert (stats.frames, stats.graphs, stats.recompiles) == (2, 2, 1), (
        "compiling a two-argument function on float32, float64, float32 must count 2 frames, 2 graphs "
        f"and 1 recompile whatever ran earlier in the process; got frames={stats.frames}, "
        f"graphs={stats.graphs}, recompiles={stats.recompiles} (counters survive torch.compiler.reset(), "
        "and a function compiled before is served from the cache unless Dynamo is reset)"
    )
    reasons = list(stats.reasons)
    assert len(reasons) == 1 and "dtype mismatch" in reasons[0], (
        f"the only recompile was caused by a dtype guard; reasons={reasons[:3]} must hold that "
        "failure and none left over from earlier compilations"
    )


@pytest.mark.task("ch09a.1")
def test_size_one_is_specialised_even_when_dynamic():
    """With dynamic=True one symbolic graph serves every length except 1."""
    calls = [torch.ones(2, 5), torch.ones(2, 9), torch.ones(2, 1), torch.ones(2, 12)]
    stats, _ = hidden_stats("running_mean", calls, {"dynamic": True})
    assert (stats.graphs, stats.recompiles) == (2, 1), (
        "with dynamic=True one symbolic graph serves every length except 1 (size 1 is always "
        f"specialised), so lengths 5, 9, 1, 12 cost 2 graphs and 1 recompile; got graphs={stats.graphs}, "
        f"recompiles={stats.recompiles}"
    )


@pytest.mark.task("ch09a.1")
def test_compile_stats_keeps_every_reason_in_order():
    """reasons holds every guard failure Dynamo recorded, in the order it recorded them (each
    new length fails the guards of every graph compiled before it)."""
    calls = [torch.ones(3), torch.ones(4), torch.ones(5)]
    stats, _ = hidden_stats("doubled", calls, {"dynamic": False})
    firsts = [r.splitlines()[0] for r in stats.reasons]
    expected = [
        "0/0: tensor 'x' size mismatch at index 0. expected 3, actual 4",
        "0/1: tensor 'x' size mismatch at index 0. expected 4, actual 5",
        "0/0: tensor 'x' size mismatch at index 0. expected 3, actual 5",
    ]
    assert firsts == expected and (stats.graphs, stats.recompiles) == (3, 2), (
        f"compile_stats(x * 2, lengths 3, 4, 5, dynamic=False) gave reasons {firsts} (graphs "
        f"{stats.graphs}, recompiles {stats.recompiles}); expected {expected}: the length 5 fails "
        "the guards of both earlier graphs, newest first, and every recorded text counts"
    )


@pytest.mark.task("ch09a.1")
def test_compile_stats_reads_any_iterable_once():
    """inputs is any iterable: a generator, which can be read only once, gives the counts a list gives (every item called once), and an empty one gives zeros."""
    calls = [torch.ones(3), torch.ones(4), torch.ones(5)]
    stats, _ = hidden_stats("doubled", calls, {"dynamic": False}, one_shot=True)
    seen = (stats.frames, stats.graphs, stats.graph_breaks, stats.recompiles, len(stats.reasons))
    assert seen == (3, 3, 0, 2, 3), (
        "compile_stats(x * 2, a generator of lengths 3, 4, 5, dynamic=False) gave (frames, "
        f"graphs, graph_breaks, recompiles, reasons) = {seen}, where the same calls in a list "
        "give (3, 3, 0, 2, 3): inputs is an Iterable, which may be read only once — a first "
        "pass (next(iter(inputs)), explain() on the first item, len()) takes items the timed "
        "pass never sees; read it once, into a list, and work from that"
    )
    stats, _ = hidden_stats("doubled", [], {}, one_shot=True)
    assert tuple(stats) == (0, 0, 0, 0, []), (
        f"compile_stats(fn, an empty generator) returned {tuple(stats)}: no call, no count"
    )


@pytest.mark.task("ch09a.1")
def test_compile_stats_forwards_the_backend_and_python_scalars():
    """compile_kwargs reach torch.compile (the backend given compiles every graph), and a
    Python int read by the trace is a guarded value that recompiles."""
    calls = [(torch.ones(3), 2), (torch.ones(3), 3), (torch.ones(3), 4)]
    stats, spied = hidden_stats("times_n", calls, {"dynamic": False}, spy=True)
    assert spied == stats.graphs == 3 and stats.recompiles == 2, (
        f"compile_stats(x * n, n = 2, 3, 4, dynamic=False, backend=<a backend of ours>): our backend "
        f"saw {spied} graph(s) and the stats say graphs={stats.graphs}, recompiles={stats.recompiles}; "
        "expected 3, 3, 2: pass the backend given in compile_kwargs on to torch.compile (wrapped in "
        "a counter if you like), and the int n is baked into each graph"
    )
    assert any("n == 2" in r for r in stats.reasons), (
        f"reasons={list(stats.reasons)[:2]} lacks Dynamo's 'n == 2' guard failure"
    )
    for wrap in ("namedtuple", "tuple subclass"):
        with because(f"compile_stats raised on items that are a {wrap} of (x, n)"):
            stats, _ = hidden_stats("times_n", calls[:2], {"dynamic": False}, wrap=wrap)
        assert (stats.frames, stats.graphs, stats.recompiles) == (2, 2, 1), (
            f"compile_stats(x * n, items (ones(3), n) for n = 2, 3, each a {wrap}, "
            f"dynamic=False) gave (frames, graphs, recompiles) = {tuple(stats)[:3]}; expected "
            "(2, 2, 1), as for plain tuples: an item that is a tuple — a namedtuple or any "
            "subclass included — is the call's positional arguments. Test with "
            "isinstance(item, tuple), not type(item) is tuple"
        )
    stats, _ = hidden_stats("times_n", calls, {})
    assert (stats.graphs, stats.recompiles) == (2, 1), (
        "with dynamic=None the second int makes n symbolic: n = 2, 3, 4 cost 2 graphs and 1 "
        f"recompile; got graphs={stats.graphs}, recompiles={stats.recompiles}"
    )


@probe
def stats_through_a_used_counter(name, calls, kwargs):
    """compile_stats(fn, calls, backend=a CompileCounterWithBackend the caller already used on
    another function): (CompileStats, the counter's frame_count before and after)."""
    fresh_dynamo()
    counter = CompileCounterWithBackend("eager")
    torch.compile(cosine_plus_one, backend=counter, dynamic=False)(torch.ones(3))
    before = counter.frame_count
    stats = comp.compile_stats(HIDDEN_FUNCTIONS[name], calls, backend=counter, **dict(kwargs))
    return stats, before, counter.frame_count


@pytest.mark.task("ch09a.1")
def test_a_counting_backend_of_the_callers_counts_only_this_run():
    """A backend that is itself a counter (CompileCounterWithBackend) and has already counted
    graphs of other functions: compile_stats reports this run's graphs and breaks only, and the
    backend is handed every graph of the run."""
    calls = [(torch.ones(3), 2), (torch.ones(3), 3)]
    with because("compile_stats raised with a CompileCounterWithBackend as its backend"):
        stats, before, after = stats_through_a_used_counter("times_n", calls, {"dynamic": False})
    assert (stats.frames, stats.graphs, stats.graph_breaks, stats.recompiles) == (2, 2, 0, 1), (
        f"compile_stats(x * n, n = 2, 3, dynamic=False, backend=a CompileCounterWithBackend "
        f"that had already counted {before} graphs of other functions) gave (frames, graphs, "
        f"graph_breaks, recompiles) = {tuple(stats)[:4]}; expected (2, 2, 0, 1). The counts are "
        "this run's only: wrap the given backend in a counter of your own (or count the "
        "difference), never read a count the caller's object carried in"
    )
    assert after - before == stats.graphs, (
        f"the caller's counting backend counted {after - before} new graph(s) (frame_count "
        f"{before} -> {after}) while compile_stats reports {stats.graphs}: hand every graph to "
        "the backend given, and leave its own count alone (no reset)"
    )


# ---------------------------------------------------------------- ch09a.2 serve (repair)


class Smoother(nn.Module):
    """(B, T) ids -> (B, T, V): a different causal model, to check serve does not assume one."""

    def __init__(self, vocab=20, dim=12):
        super().__init__()
        self.vocab = vocab
        self.emb = nn.Parameter(torch.randn(vocab, dim))
        self.head = nn.Parameter(torch.randn(dim, vocab) / dim**0.5)

    def forward(self, idx):
        h = self.emb[idx]  # (B, T, D)
        pos = torch.arange(1, idx.shape[1] + 1, dtype=h.dtype)
        return (torch.cumsum(h, dim=1) / pos[None, :, None]) @ self.head + 1.0  # (B, T, V)


def smoother_reference(weights, idx):
    model = Smoother()
    model.load_state_dict(weights)
    with torch.no_grad():
        return model(idx)


@probe
def served_smoother(lengths, batch, seed):
    """serve(Smoother in eval mode, requests as a tuple, backend=a GraphLog): requests,
    weights, outputs, the calls each graph our backend compiled served and the token ids
    they were given, and Dynamo's frame counters (ok, total)."""
    fresh_dynamo()
    torch.manual_seed(seed)
    model = Smoother().eval()
    requests = book_requests(batch=batch, vocab=model.vocab, seed=seed, lengths=lengths)
    log = GraphLog()
    outputs = comp.serve(model, tuple(requests), backend=log)  # any Sequence, a tuple too
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return (
        requests,
        weights,
        outputs,
        (list(log.calls), sum(log.tokens)),
        (counters["frames"]["ok"], counters["frames"]["total"]),
    )


@pytest.mark.task("ch09a.2")
@pytest.mark.points(3)
def test_serve_other_lengths_and_batch():
    """serve returns one output per request, in order, equal to eager, after at most two
    compilations through the given backend, for another model, batch size and lengths (no
    request at all included)."""
    lengths = [9, 6, 12, 6, 40, 15, 18, 21, 24, 27, 30, 9, 33, 2, 47, 50, 3, 64, 12, 70]
    with because("serve(another causal model, 20 batched requests) raised"):
        seen = served_smoother(lengths, 3, 11)
    check_served(seen, smoother_reference, "a Smoother model, 20 requests of batch 3, 17 lengths")
    no_request = (
        "an empty sequence is a legal list of requests, and serve then returns an empty list "
        "(it need compile nothing); look at what reads a first request before the loop"
    )
    with because(f"serve(a Smoother model, no request) raised: {no_request}"):
        _, _, outputs, _, _ = served_smoother([], 3, 11)
    assert len(outputs) == 0, (
        f"serve(a Smoother model, no request) returned {len(outputs)} outputs: {no_request}"
    )


@probe
def served_in_turn(lengths, seeds):
    """serve called in turn, without a reset in between, on Smoother(seed) in eval mode for
    each seed (a seed repeated is the same model again), each call with a GraphLog of its own:
    per call (requests, weights, outputs, (graph calls, tokens))."""
    fresh_dynamo()
    models = {}
    out = []
    for seed in seeds:
        if seed not in models:
            torch.manual_seed(seed)
            models[seed] = Smoother().eval()
        model = models[seed]
        requests = book_requests(batch=2, vocab=model.vocab, seed=seed, lengths=lengths)
        log = GraphLog()
        outputs = comp.serve(model, requests, backend=log)
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        out.append((requests, weights, outputs, (list(log.calls), sum(log.tokens))))
    return out


@pytest.mark.task("ch09a.2")
def test_each_serve_call_compiles_through_its_own_backend():
    """serve called again on the same model with another backend, then on another model: each
    call runs every request through graphs its own backend compiled, and returns its own
    model's outputs (nothing cached from an earlier call by model identity)."""
    seeds = (21, 21, 22)
    with because("serve raised when called a second time (same model, another backend)"):
        seen = served_in_turn([5, 9, 13], seeds)
    for k, (requests, weights, outputs, (calls, tokens)) in enumerate(seen):
        what = ("first call", "the same model again, another backend", "another model")[k]
        asked = sum(idx.numel() for idx in requests)
        assert 1 <= len(calls) <= 2 and tokens >= asked, (
            f"serve call {k + 1} ({what}), requests of lengths 5, 9, 13: the backend given to "
            f"this call compiled {len(calls)} graph(s) that saw {tokens} of the {asked} token "
            "ids asked; expected 1 or 2 graphs that see every request. Every call compiles "
            "through the backend it is given (torch.compile(model, backend=backend) per call, "
            "not a compiled model kept from an earlier call), with the length dynamic"
        )
        assert len(outputs) == len(requests), (
            f"serve call {k + 1} ({what}) returned {len(outputs)} outputs for {len(requests)}"
        )
        for j, (idx, got) in enumerate(zip(requests, outputs)):
            judge.close(
                got,
                smoother_reference(weights, idx),
                f"serve call {k + 1} ({what}), output {j}: not the eager output of the model "
                "given to this call",
                atol=1e-5,
                rtol=1e-5,
            )


# ---------------------------------------------------------------- ch09a.3 NormalizedGate (repair)


@pytest.mark.task("ch09a.3")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "dim, batch, bias",
    [(5, 7, 1.5), (5, 7, -1.5), (5, 7, 0.0), (6, 1, 0.7), (3, 12, -0.4)],
    ids=["positive", "negative", "mixed-rows", "one-row", "tall"],
)
def test_gate_other_size_compiles_fullgraph_and_matches(dim, batch, bias):
    """NormalizedGate traces as one graph, never recompiles for new values, and matches the gate's
    maths and its gradients on other sizes, signs and batch shapes."""
    with because(f"NormalizedGate({dim}) raised on a batch of {batch}"):
        seen = gate_seen(dim, batch, bias, 21)
    check_gate(seen, f"dim {dim}, batch {batch}, bias {bias}")


@probe
def default_gate_at_zero_mean(batch):
    """NormalizedGate() at its default size with zero weights and a bias of alternating +1.5 /
    -1.5: every activation is exactly the bias, so the batch's mean is exactly 0. Explain's
    graph count, the input, the weights and the output."""
    fresh_dynamo()
    gate = comp.NormalizedGate()
    with torch.no_grad():
        gate.lin.weight.zero_()
        gate.lin.bias.copy_(torch.tensor([1.5, -1.5] * 4))
    x = torch.randn(batch, 8, generator=torch.Generator().manual_seed(5))
    graphs = torch._dynamo.explain(gate)(x).graph_count
    fresh_dynamo()
    weights = {"weight": gate.lin.weight.detach().clone(), "bias": gate.lin.bias.detach().clone()}
    with torch.no_grad():
        return {"graphs": graphs, "x": x, "weights": weights, "out": gate(x)}


@pytest.mark.task("ch09a.3")
def test_default_gate_at_a_mean_of_exactly_zero_keeps_the_negative_part():
    """NormalizedGate() keeps the default size 8 and, traced as one graph, keeps the positive
    part only when the batch's mean is above 0: at exactly 0 the negative part, as the broken
    program's `if` did."""
    with because("NormalizedGate() raised on a batch of 8 features (its default size is 8)"):
        seen = default_gate_at_zero_mean(3)
    assert seen["graphs"] == 1, (
        f"torch._dynamo.explain(NormalizedGate()) found {seen['graphs']} graphs: choose the "
        "branch with torch.where on the 0-d mean instead of a Python `if`"
    )
    want, _ = gate_maths(seen["weights"], seen["x"], torch.ones(3, 8))
    judge.close(
        seen["out"],
        want,
        "NormalizedGate() with a batch mean of exactly 0. The program keeps the positive part "
        "only when the mean is > 0, so at 0 it keeps the negative part: compare with >, not >=",
        atol=1e-8,
        rtol=1e-5,
    )


def peak_in_the_discarded_part(sign, seed, batch=4, dim=5):
    """A batch for the identity gate (h = x) whose mean has ``sign`` while its largest
    |activation| (3.0) has the other sign: the gate discards the peak's part."""
    x = torch.rand(batch, dim, generator=torch.Generator().manual_seed(seed)) * sign
    x[batch // 2, dim // 2] = -3.0 * sign
    return x


GATE_PEAKS = {  # name -> the batch x (the gate's weight is the identity, its bias zero)
    "mean > 0, peak negative": peak_in_the_discarded_part(1.0, 90),
    "mean < 0, peak positive": peak_in_the_discarded_part(-1.0, 91),
    "the book's 2 x 2": torch.tensor([[3.0, -5.0], [1.0, 2.0]]),
    # The division is by the peak alone at every scale: no epsilon, no floor.
    "the book's 2 x 2 times 1e-12 (peak 5e-12)": torch.tensor([[3.0, -5.0], [1.0, 2.0]]) * 1e-12,
    # far below any "safe division" floor (1e-12, float32's eps): peak 3e-18, whose square
    # (autograd's divisor) is still a normal float32
    "mean > 0, peak negative, times 1e-18": peak_in_the_discarded_part(1.0, 92) * 1e-18,
    "mean < 0, peak positive, times 1e12": peak_in_the_discarded_part(-1.0, 93) * 1e12,
}


@probe
def identity_gate(x, layout):
    """NormalizedGate(D) with its weight set to the identity and its bias to zero (so h = x),
    on ``x`` laid out in ``layout`` (harness.layouts): the output and the gradients of the
    output's sum with respect to x and the weight."""
    gate = comp.NormalizedGate(x.shape[1])
    with torch.no_grad():
        gate.lin.weight.copy_(torch.eye(x.shape[1]))
        gate.lin.bias.zero_()
    x_in = laid_out(x, layout).requires_grad_(True)
    out = gate(x_in)
    gx, gw = torch.autograd.grad(out.sum(), [x_in, gate.lin.weight])
    return out.detach(), gx, gw


@pytest.mark.task("ch09a.3")
def test_gate_divides_by_the_peak_before_gating_in_every_layout():
    """NormalizedGate divides by the largest |activation| of h before gating, also when that peak lies in the part the gate discards; the same values in any memory layout give the same output and gradients."""
    for name, x in GATE_PEAKS.items():
        d = x.shape[1]
        weights = {"weight": torch.eye(d), "bias": torch.zeros(d)}
        want, grads = gate_maths(weights, x, torch.ones_like(x))
        for layout in LAYOUTS:
            with because(f"NormalizedGate({d}) raised on a {layout} batch ({name})"):
                out, gx, gw = identity_gate(x, layout)
            peak = float(x.abs().max())
            judge.close(
                out,
                want,
                f"NormalizedGate({d}) with h = x (identity weight, zero bias) on a {layout} "
                f"batch whose mean is {float(x.mean()):+.3g} and whose largest |h| is {peak:.3g} "
                f"({name}): the gate keeps one sign's part, but the divisor is the largest "
                "|activation| of h before gating — whole batch, both signs — not the largest "
                "value left after it, and by that peak alone at any scale (tiny or huge "
                "activations alike, a peak of 3e-18 too: no epsilon added to it, no floor or "
                "clamp under it)",
                atol=1e-6,
                rtol=1e-5,
            )
            for what, got, expected in (("x", gx, grads["x"]), ("weight", gw, grads["weight"])):
                judge.close(
                    got,
                    expected,
                    f"the gradient of NormalizedGate({d})(x).sum() with respect to {what} on a "
                    f"{layout} batch ({name}) differs from the gate's maths: the division by "
                    "the peak of h before gating stays in the graph",
                    atol=1e-5,
                    rtol=1e-4,
                )


# ---------------------------------------------------------------- ch09a.4 guard_reasons


@probe
def hidden_reasons(name, first, second, kwargs, runs=2, warm=False):
    """guard_reasons(fn, first, second, **kwargs) `runs` times from a fresh process state
    (after compiling fn on `second`, when warm): the (argument, kind, text) triples of each
    answer (reason_triples)."""
    fresh_dynamo()
    fn = HIDDEN_FUNCTIONS[name]
    if warm:
        torch.compile(fn, **{**dict(kwargs), "backend": "eager"})(*second)
    answers = []
    for _ in range(runs):
        got = comp.guard_reasons(fn, tuple(first), tuple(second), **dict(kwargs))
        answers.append(reason_triples(got))
    return answers


CASES = {  # id: (fn, first, second, kwargs, expected)
    "first-dim": ("column_sums", (torch.ones(6, 2),), (torch.ones(9, 2),), {}, [("x", "shape")]),
    "dynamic-true": (
        "column_sums",
        (torch.ones(6, 2),),
        (torch.ones(9, 2),),
        {"dynamic": True},
        [],
    ),
    "python-bool": (
        "uses_flag",
        (torch.ones(2), True),
        (torch.ones(2), False),
        {},
        [("flag", "value")],
    ),
    "python-str": (
        "by_mode",
        (torch.ones(2), "add"),
        (torch.ones(2), "sub"),
        {},
        [("mode", "value")],
    ),
    "python-float": (
        "scaled",
        (torch.ones(2), 0.5),
        (torch.ones(2), 0.25),
        {"dynamic": False},
        [("s", "value")],
    ),
    "int-dynamic-true": ("times_n", (torch.ones(2), 2), (torch.ones(2), 5), {"dynamic": True}, []),
    "second-argument": (
        "product",
        (torch.ones(3), torch.ones(3)),
        (torch.ones(3), torch.ones(3, dtype=torch.float64)),
        {"dynamic": False},
        [("y", "dtype")],
    ),
    "dtype-hides-shape": (
        "doubled",
        (torch.ones(3),),
        (torch.ones(4, dtype=torch.float64),),
        {"dynamic": False},
        [("x", "dtype")],
    ),
    "requires-grad": (
        "doubled",
        (torch.ones(3),),
        (torch.ones(3).requires_grad_(),),
        {"dynamic": False},
        [("x", "other")],
    ),
    "unused-tensor": (
        "ignores_z",
        (torch.ones(3), torch.ones(2)),
        (torch.ones(3), torch.ones(5, dtype=torch.float64)),
        {"dynamic": False},
        [],
    ),
    "same-call": ("doubled", (torch.ones(3),), (torch.ones(3),), {"dynamic": False}, []),
    "after-a-break": (
        "break_then_branch",
        (torch.ones(3),),
        (torch.ones(5),),
        {"dynamic": False},
        [("x", "shape"), ("y", "shape"), ("y", "shape")],
    ),
}


# Dynamo's own message of each failing guard, as it records it (less the "frame/compile" id
# in front, and for a Python value the traced line quoted after it): each reported text must
# hold it, whole, so that the values a guard compared (expected 6, actual 9) survive.
GUARD_TEXTS = {
    "first-dim": ["tensor 'x' size mismatch at index 0. expected 6, actual 9"],
    "python-bool": ["flag == True"],
    "python-str": ["mode == 'add'"],
    "python-float": ["s == 0.5"],
    "second-argument": ["tensor 'y' dtype mismatch. expected Float, actual Double"],
    "dtype-hides-shape": ["tensor 'x' dtype mismatch. expected Float, actual Double"],
    "requires-grad": ["tensor 'x' requires_grad mismatch. expected requires_grad=0"],
    "after-a-break": [
        "tensor 'x' size mismatch at index 0. expected 3, actual 5",
        "tensor 'y' size mismatch at index 0. expected 3, actual 5",
        "tensor 'y' size mismatch at index 0. expected 3, actual 5",
    ],
}


# A second call with the same arguments must give the same answer (a clean cache, cleared
# guard failures): a case with a failing guard and one with none show it. Asked twice,
# after-a-break (guards failing in three frames) compiled 12 frames and killed no mutant
# the other two miss.
ASKED_TWICE = ("first-dim", "same-call")

# Each silent case's function on inputs where a guard it did install fails: an answer of
# "nothing failed" counts only from a guard_reasons that names the failure there.
SPEAKS = {  # id: (first, second, kwargs, expected)
    "dynamic-true": ((torch.ones(6, 2),), (torch.ones(9, 2),), {}, [("x", "shape")]),
    "int-dynamic-true": (
        (torch.ones(2), 2),
        (torch.ones(2), 5),
        {"dynamic": False},
        [("n", "value")],
    ),
    "unused-tensor": (
        (torch.ones(3), torch.ones(2)),
        (torch.ones(5), torch.ones(5, dtype=torch.float64)),
        {"dynamic": False},
        [("x", "shape")],
    ),
    "same-call": ((torch.ones(3),), (torch.ones(4),), {"dynamic": False}, [("x", "shape")]),
}


@pytest.mark.task("ch09a.4")
@pytest.mark.points(1)
@pytest.mark.parametrize("case", list(CASES))
def test_guard_reasons_reports_only_guards_that_failed(case):
    """guard_reasons reports exactly the guards Dynamo found failing on the second call (every
    frame's, in order), each with its argument, its kind and Dynamo's text of the failure, and
    the same answer when called again."""
    name, first, second, kwargs, expected = CASES[case]
    kwargs = {"backend": "eager", **kwargs}
    runs = 2 if case in ASKED_TWICE else 1  # each call compiles twice: repeat only where it tells
    with because(f"guard_reasons({name}, ...) raised"):
        answers = hidden_reasons(name, first, second, kwargs, runs=runs)
    got, again = (
        pairs(a, f"guard_reasons({name}, ...) ({case})") for a in (answers[0], answers[-1])
    )
    assert got == expected, (
        f"guard_reasons({name}, first, second, {kwargs}) ({case}) gave {got}, expected {expected}: "
        "report exactly the guards Dynamo recorded failing on the second call (none when the "
        "compiled code is reused, even if an input changed; one per failing frame after a graph "
        "break), with kind 'shape', 'dtype', 'value' (a Python scalar) or 'other'"
    )
    for k, ((argument, kind, text), message) in enumerate(
        zip(answers[0], GUARD_TEXTS.get(case, []))
    ):
        assert message in text, (
            f"guard_reasons({name}, first, second, {kwargs}) ({case}): reason {k} "
            f"({argument!r}, {kind!r}) has the text {text.splitlines()[0][:120]!r}, which does "
            f"not hold Dynamo's guard-failure message {message!r}: text is Dynamo's own text "
            "of that failed guard, as recorded (the values it compared included), not a "
            "description written from the argument and kind, nor another guard's text"
        )
    assert again == got, (
        f"guard_reasons with the same arguments gave {got}, then {again} when called again: each call must "
        "start from a clean Dynamo cache (torch.compiler.reset()), or graphs compiled by an earlier call "
        "serve the second input and no guard fails"
    )
    if case in SPEAKS:  # silence counts beside a guard_reasons that speaks where a guard fails
        first, second, kwargs, expected = SPEAKS[case]
        with because(f"guard_reasons({name}, ...) raised"):
            (answer,) = hidden_reasons(name, first, second, {"backend": "eager", **kwargs}, runs=1)
        spoken = pairs(answer, f"guard_reasons({name}, ...)")
        assert spoken == expected, (
            f"guard_reasons({name}, first, second, {kwargs}) gave {spoken}, expected {expected}: "
            "the same function, on a second call that fails a guard it did install, must report "
            "that guard"
        )


@pytest.mark.task("ch09a.4")
def test_guard_reasons_starts_from_a_clean_cache():
    """A graph for the second call compiled earlier in the process does not hide the guard that
    fails after compiling on the first call."""
    (got,) = hidden_reasons(
        "column_sums",
        (torch.ones(6, 2),),
        (torch.ones(9, 2),),
        {"dynamic": False},
        runs=1,
        warm=True,
    )
    got = pairs(got, "guard_reasons(column_sums, ...)")
    assert got == [("x", "shape")], (
        f"with a graph for the second call already in Dynamo's cache, guard_reasons gave {got}; "
        "expected [('x', 'shape')]: reset Dynamo (torch.compiler.reset()) before compiling on the "
        "first call, or the old graph serves the second call and no guard fails"
    )


IDENTIFIER_CASES = (  # (second call, expected): odd_names(X_2, _scaleB) first on (ones(3), 0.5)
    ((torch.ones(4), 0.5), [("X_2", "shape")]),
    ((torch.ones(3), 0.25), [("_scaleB", "value")]),
)

# The words of each kind's guard texts. The sweep below plants the words of the *other*
# kinds wherever a guard's text can carry them: a tensor's name (tensor 'x_size' dtype
# mismatch), and for a Python value's guard, which quotes the traced line with its comment,
# the file and the function (n == 2  # return x * n + x.size(0)  # .../size_dtype/f.py in
# resize), the scalar's name and a string's own value (mode == 'dtype').
KIND_WORDS = {
    "shape": ("size", "stride", "shape"),
    "dtype": ("dtype",),
    "other": ("requires_grad", "grad"),
}
WORDS_OF_TENSOR_GUARDS = ("tensor", "mismatch", "expected", "actual", "index", "Float", "Double")
NUMERIC_LINES = (  # a line using tensor T and number S; every tensor op here is whole-graph
    "{T} * {S} + {T}.size(0)",
    "({T} * {S}).to({T}.dtype)",
    "{T} * {S} + {T}.stride(0)",
    "{T}.reshape({T}.shape) * {S}",
)
CHANGES = ("shape", "dtype", "other", "int", "float", "bool", "str")  # what the second call changes


def _decoy_name(rng, groups, used):
    """An unused identifier holding a word of each of ``groups`` (each kind's words), in a
    random order, with capitals, digits or underscores around them."""
    while True:
        words = [rng.choice(group) for group in groups]
        rng.shuffle(words)
        word = "_".join(words)
        name = rng.choice(("{w}", "{w}s", "x_{w}", "_{w}", "{w}_2", "{W}1", "n_{w}_T")).format(
            w=word, W=word[:1].upper() + word[1:]
        )
        if name.isidentifier() and not keyword.iskeyword(name) and name not in used:
            used.add(name)
            return name


def guard_word_cases(seed):
    """A module's source and one guard_reasons call per kind of change (CHANGES, in a seeded
    order), each function's names, line, comment and string values full of other kinds'
    words: (folder prefix, module name, source, calls [(function, first, second)], and per
    call the [(argument, kind)] it must report and the function's line). Tensors are specs
    {"shape", "dtype", "grad"}."""
    rng = random.Random(seed)
    changes = list(CHANGES)
    rng.shuffle(changes)
    used, functions, calls, expected = set(), [], [], []
    every_word = [w for words in KIND_WORDS.values() for w in words] + ["float64", "index"]
    for i, change in enumerate(changes):
        kind = change if change in ("shape", "dtype", "other") else "value"
        groups = [words for k, words in KIND_WORDS.items() if k != kind]  # other kinds' words
        others = [w for group in groups for w in group]
        T = _decoy_name(rng, groups, used)  # the tensor argument
        S = _decoy_name(rng, groups, used)  # the Python scalar argument
        fname = f"{_decoy_name(rng, groups, used)}_{i}"
        n = rng.randint(2, 6)
        tensor = {"shape": [n], "dtype": "float32", "grad": False}
        changed = dict(tensor)
        if change == "shape":
            changed["shape"] = [rng.choice([m for m in range(2, 8) if m != n])]
        elif change == "dtype":
            changed["dtype"] = rng.choice(["float64", "float16", "bfloat16"])
        elif change == "other":
            changed["grad"] = True
        if change == "bool":
            a = rng.random() < 0.5
            b, line = not a, "{T}.exp() if {S} else {T}.log1p()"
        elif change == "str":
            a, b = rng.sample(every_word, 2)
            line = "{T} + 1 if {S} == " + repr(a) + " else {T} - 1"
        elif change == "float":
            a, b = rng.sample([0.5, 0.25, 1.5, -2.0, 3.125], 2)
            line = rng.choice(NUMERIC_LINES)
        else:
            a = rng.randint(2, 9)
            b = rng.choice([m for m in range(2, 10) if m != a]) if change == "int" else a
            line = rng.choice(NUMERIC_LINES)
        phrase = rng.sample(others + list(WORDS_OF_TENSOR_GUARDS), 4)
        comment = " ".join(phrase) + rng.choice([" == 3", " at index 0", ". expected Float"])
        functions.append(
            f"def {fname}({T}, {S}):\n    return {line.format(T=T, S=S)}  # {comment}\n"
        )
        calls.append((fname, [tensor, a], [changed, b]))
        expected.append(([(T if kind != "value" else S, kind)], line.format(T=T, S=S)))
    prefix = "_".join(rng.sample(every_word, 3)) + "_"
    module = "_".join(rng.sample(every_word, 2))
    return prefix, module, "\n\n".join(functions), calls, expected


def _built(arg):
    """A call's argument from its spec: a tensor of ones for a {"shape", "dtype", "grad"} dict."""
    if not isinstance(arg, dict):
        return arg
    t = torch.ones(*arg["shape"], dtype=getattr(torch, arg["dtype"]))
    return t.requires_grad_(arg["grad"])


def _shown(args):
    """A call's argument specs as text: (ones(3, float32, requires_grad), 2)."""
    return (
        "("
        + ", ".join(
            f"ones({', '.join(map(str, a['shape']))}, {a['dtype']}{', requires_grad' * a['grad']})"
            if isinstance(a, dict)
            else repr(a)
            for a in args
        )
        + ")"
    )


@probe
def reasons_in_a_written_module(prefix, module, source, calls):
    """``source`` written as <module>.py in a fresh folder named from ``prefix`` and imported
    from there (so Dynamo quotes its lines, path and function names); for each (function,
    first, second) of ``calls``, guard_reasons(function, first, second, backend="eager",
    dynamic=False) from a fresh process state: the triples of each answer (reason_triples)."""
    answers = []
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        path = Path(folder) / f"{module}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"ch09a_words_{module}", path)
        written = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(written)
        for name, first, second in calls:
            fresh_dynamo()
            fn = getattr(written, name)
            first, second = tuple(map(_built, first)), tuple(map(_built, second))
            got = comp.guard_reasons(fn, first, second, backend="eager", dynamic=False)
            answers.append(reason_triples(got))
    fresh_dynamo()
    return answers


@pytest.mark.task("ch09a.4")
def test_guard_reasons_names_any_identifier_and_kinds_by_the_guard():
    """An argument is named whole whatever identifier the function gives it (capitals, digits and underscores included), and each guard's kind is read from the guard itself, whatever words of other kinds its names, traced line, file or values hold."""
    for second, expected in IDENTIFIER_CASES:
        with because("guard_reasons(odd_names, ...) raised"):
            (answer,) = hidden_reasons(
                "odd_names", (torch.ones(3), 0.5), second, {"backend": "eager", "dynamic": False}, 1
            )
        got = pairs(answer, "guard_reasons(odd_names, ...)")
        assert got == expected, (
            f"guard_reasons(odd_names(X_2, _scaleB), first=(ones(3), 0.5), second=(ones"
            f"{tuple(second[0].shape)}, {second[1]}), dynamic=False) gave {got}, expected "
            f"{expected}: an argument's name is any Python identifier (capitals, digits and "
            "underscores included). Read it whole from Dynamo's text (tensor 'X_2' size "
            "mismatch, L['_scaleB'] == 0.5): a pattern of lowercase letters only misses it"
        )
    prefix, module, source, calls, expected = guard_word_cases(2613)
    with because("guard_reasons raised on a function of a module written to a temporary folder"):
        answers = reasons_in_a_written_module(prefix, module, source, calls)
    for (name, first, second), answer, (want, line) in zip(calls, answers, expected):
        got = pairs(answer, f"guard_reasons({name}, ...)")
        shown = [text.splitlines()[0][:110] for _, _, text in answer]
        assert got == want, (
            f"guard_reasons({name}, first={_shown(first)}, second={_shown(second)}, "
            "dynamic=False), "
            f"the function's line being `return {line}`, gave {got}, expected {want}; "
            f"Dynamo's text: {shown}. The words of a text do not tell its kind: a tensor's "
            "name may hold 'size' or 'dtype', and a Python value's guard quotes the traced "
            "source line with its comment, the file's path and the function's name, which may "
            "hold any of them. Read the kind from the form of the guard itself (which property "
            "of which tensor mismatched, or which name was compared with ==), not from a word "
            "found anywhere in the text"
        )
