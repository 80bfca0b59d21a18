"""Public tests for ch09a — run with `pytest exercises/ch09a` (add `--impl solutions` to
see the reference pass). Every compile uses the "eager" backend: Dynamo traces and
guards exactly as it would for inductor, but nothing is code-generated, so a test takes
a fraction of a second instead of ~20 s.

Functions, models and backends are live objects, so every call to your code happens
inside a @probe below; each probe starts from an empty compile cache and zeroed counters
(torch.compiler.reset() alone does not clear torch._dynamo.utils.counters), so the order
of the tests does not matter."""

import sys

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # trusted-side helpers; a graded run's student process has only harness.probe/target
    from harness.evidence import brief
except ImportError:  # there the probes below never need them
    pass

comp = chapter_module("ch09a", "compilation")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "BOOK_LENGTHS FUNCTIONS GraphLog INDUCTOR MODELS _subject book_requests clip_or_shift "
    "fresh_dynamo ignores_n reason_triples scale scale_by skip_compile_bookkeeping "
    "tagger_with_vocab"
)


def skip_compile_bookkeeping():
    """Turn off two costs Dynamo pays after every compile that no test here observes: a
    cache-flushing benchmark of the new guards (a compile-time metric, ~30 ms each) and a
    garbage collection. The chapter's tests compile about 100 frames; this cuts their time by about a third.
    Runs wherever this module is imported, so in the grader's student process too."""
    torch._dynamo.config.run_gc_after_compile = False
    guards = torch._dynamo.guards
    if hasattr(guards, "profile_guard_manager"):  # torch 2.6+: it only feeds guard_latency_us
        guards.profile_guard_manager = lambda *args: 0.0


skip_compile_bookkeeping()

BOOK_LENGTHS = [5, 8, 8, 11, 14, 17, 5, 20, 23, 26, 29, 32, 35]


class GraphLog:
    """The "eager" backend, keeping one entry per graph it is handed: the number of calls
    that graph served, and the token ids (integer tensor elements) those calls were given.
    The graph count is the log's length; a request that ran eagerly passed through no
    graph, so its tokens are missing from ``tokens``."""

    def __init__(self):
        self.calls = []
        self.tokens = []

    def __call__(self, gm, example_inputs):
        slot = len(self.calls)
        self.calls.append(0)
        self.tokens.append(0)
        forward = gm.forward

        def run(*args):
            self.calls[slot] += 1
            self.tokens[slot] += sum(
                a.numel() for a in args if isinstance(a, torch.Tensor) and not a.is_floating_point()
            )
            return forward(*args)

        return run


def fresh_dynamo():
    """Forget every compiled frame, counter and guard failure of earlier probes."""
    torch.compiler.reset()
    counters.clear()


def book_requests(batch=1, vocab=32, seed=0, lengths=BOOK_LENGTHS):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (batch, t), generator=g) for t in lengths]


def clip_or_shift(x):
    y = x * 2
    if y.sum() > 0:  # a Python `if` on a tensor value: Dynamo cannot trace through it
        return y.clamp(max=1.0)
    return y - 1


def scale(x):
    return torch.sin(x) * 3


def scale_by(x, n):
    return x * n + 1


def ignores_n(x, n):
    return x * 2


FUNCTIONS = {f.__name__: f for f in (clip_or_shift, scale, scale_by, ignores_n)}


def _subject(name, seed=0):
    """The function or model a probe compiles: a module-level function of a test file, or
    the chapter's CausalTagger built from a fixed seed."""
    if name == "tagger":
        torch.manual_seed(seed)
        return comp.CausalTagger().eval()
    return FUNCTIONS[name]


INDUCTOR = "torch._inductor.compile_fx"  # imported only when inductor compiles something


@probe
def stats_of(name, calls, kwargs, runs=1):
    """compile_stats(subject, calls, **kwargs), `runs` times in a row from a fresh process
    state: the list of CompileStats it returned."""
    fresh_dynamo()
    subject = _subject(name)
    kwargs = {"backend": "eager", **dict(kwargs)}
    return [comp.compile_stats(subject, calls, **kwargs) for _ in range(runs)]


@probe
def loads_inductor(task, name, calls):
    """Whether compile_stats(subject, calls) (or guard_reasons(subject, *calls)), given no
    backend, loaded the inductor backend (None when something loaded it earlier). The other
    probes always pass backend="eager"."""
    fresh_dynamo()
    if INDUCTOR in sys.modules:
        return None
    if task == "compile_stats":
        comp.compile_stats(_subject(name), calls)
    else:
        comp.guard_reasons(_subject(name), *calls)
    fresh_dynamo()
    return INDUCTOR in sys.modules


def counted(stats):
    return (stats.frames, stats.graphs, stats.recompiles, stats.graph_breaks)


# ---------------------------------------------------------------- ch09a.1 compile_stats


@pytest.mark.task("ch09a.1")
@pytest.mark.points(3)
@pytest.mark.parametrize(
    "dynamic, graphs, recompiles",
    [(False, 8, 7), (None, 2, 1), (True, 1, 0)],
    ids=["dynamic=False", "dynamic=None", "dynamic=True"],
)
def test_compile_stats_counts_the_books_thirteen_requests(dynamic, graphs, recompiles):
    calls = [(idx,) for idx in book_requests()]
    with because(f"compile_stats(tagger, 13 requests, dynamic={dynamic}) raised"):
        (stats,) = stats_of("tagger", calls, {"dynamic": dynamic})
    seen = counted(stats)
    assert seen == (graphs, graphs, recompiles, 0), (
        f"compile_stats(tagger, 13 requests of lengths {BOOK_LENGTHS}, dynamic={dynamic}) gave "
        f"(frames, graphs, recompiles, graph_breaks) = {seen}, expected {(graphs, graphs, recompiles, 0)}: "
        "count graphs with a counting backend, frames with counters['frames']['ok'], and only "
        "successful compilations of an already-compiled frame as recompiles (with dynamic=False the "
        "9th attempt hits recompile_limit (8) and is not compiled at all)"
    )
    reasons = list(stats.reasons)
    if recompiles:
        assert (
            all(isinstance(r, str) for r in reasons)
            and "size mismatch at index 1. expected 5, actual 8" in (reasons[:1] or [""])[0]
        ), (
            f"the second request (T=8 after T=5) recompiles, but reasons starts {brief(reasons[:2])}, "
            "not with \"0/0: tensor 'idx' size mismatch at index 1. expected 5, actual 8\": read the "
            "guard failures Dynamo records, in order (torch._dynamo.utils.guard_failures)"
        )
    else:
        assert reasons == [], (
            f"nothing recompiles with dynamic=True, yet reasons={brief(reasons[:3])}: report only this "
            "run's guard failures — reset Dynamo before compiling"
        )


@pytest.mark.task("ch09a.1")
@pytest.mark.points(2)
def test_compile_stats_sees_a_data_dependent_branch():
    x = torch.linspace(-1.0, 2.0, 6)
    assert not loads_inductor("compile_stats", "scale", [(x,)]), (
        "compile_stats given no backend compiled with inductor: the backend defaults to "
        '"eager" (compile_kwargs.pop("backend", "eager"))'
    )
    (stats,) = stats_of("clip_or_shift", [(x,), (x,)], {})
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
    calls = [(torch.ones(3),), (torch.ones(4),), (torch.ones(4),)]
    first, second = stats_of("scale", calls, {"dynamic": False}, runs=2)
    assert counted(first)[:3] == (2, 2, 1), (
        f"compile_stats(sin(x)*3, lengths 3, 4, 4, dynamic=False) gave frames={first.frames}, "
        f"graphs={first.graphs}, recompiles={first.recompiles}; expected 2, 2, 1"
    )
    assert counted(second) == counted(first) and list(second.reasons) == list(first.reasons), (
        f"calling compile_stats twice on the same function gave {counted(first)} then "
        f"{counted(second)}: the second run reused Dynamo's cache or counted the first run's "
        "counters — call torch.compiler.reset() first, and count counter differences (reset() does "
        "not clear torch._dynamo.utils.counters)"
    )


# ---------------------------------------------------------------- ch09a.2 serve (repair)


@probe
def served(model_name, lengths, batch, seed):
    """serve(model, requests, backend=a GraphLog) on requests of these lengths: the
    requests, the model's weights, the outputs, the calls each graph the backend was
    handed served, and Dynamo's frame counters (ok, total) over the call."""
    fresh_dynamo()
    model = MODELS[model_name](seed)
    vocab = model.vocab
    requests = book_requests(batch=batch, vocab=vocab, seed=seed, lengths=lengths)
    log = GraphLog()
    outputs = comp.serve(model, requests, backend=log)
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    frames = (counters["frames"]["ok"], counters["frames"]["total"])
    return requests, weights, outputs, (list(log.calls), sum(log.tokens)), frames


def tagger_with_vocab(seed):
    torch.manual_seed(seed)
    model = comp.CausalTagger().eval()
    model.vocab = model.table.shape[0]
    return model


MODELS = {"tagger": tagger_with_vocab}


def tagger_reference(weights, idx):
    """CausalTagger's forward, written out: embed, causal running mean, tanh, project."""
    h = weights["table"][idx]
    steps = torch.arange(1, idx.shape[1] + 1, dtype=h.dtype)
    return torch.tanh(torch.cumsum(h, dim=1) / steps[None, :, None]) @ weights["proj"]


def check_served(seen, reference, what):
    requests, weights, outputs, (calls, tokens), (ok, total) = seen
    graphs = len(calls)
    assert 1 <= graphs <= 2 and 1 <= ok <= 2 and total == ok, (
        f"serve({what}) handed {graphs} graph(s) to the backend it was given, Dynamo compiled {ok} "
        f"frame(s) and gave up on {total - ok}; expected 1 or 2 compilations, through the given "
        "backend, none abandoned: with dynamic=False every new length recompiles until "
        "recompile_limit (8), then the rest silently run eagerly — let T be dynamic"
    )
    asked = sum(idx.numel() for idx in requests)
    assert tokens >= asked, (
        f"serve({what}): the graphs the given backend compiled were given {tokens} token ids "
        f"over {sum(calls)} call(s), for requests holding {asked}, so some requests ran "
        "eagerly, outside any compiled graph: every request must run through the compiled "
        "model (one call each, or padded into batches)"
    )
    assert len(outputs) == len(requests), (
        f"serve returned {len(outputs)} outputs for {len(requests)} requests"
    )
    for k, (idx, out) in enumerate(zip(requests, outputs)):
        judge.close(
            out,
            reference(weights, idx),
            f"serve output {k} (T={idx.shape[1]}) differs from the eager model. Outputs keep "
            "request order, and a repair may change how the model is compiled (or pad on the "
            "right and slice back), never what it computes",
            atol=1e-5,
            rtol=1e-5,
        )


@pytest.mark.task("ch09a.2")
@pytest.mark.points(4)
def test_serve_the_books_requests_with_at_most_two_compilations():
    with because("serve(tagger, the book's 13 requests) raised"):
        seen = served("tagger", BOOK_LENGTHS, 1, 0)
    check_served(seen, tagger_reference, f"tagger, 13 requests of lengths {BOOK_LENGTHS}")


# ---------------------------------------------------------------- ch09a.3 NormalizedGate (repair)


@probe
def gate_seen(dim, batch, bias, seed):
    """NormalizedGate(dim) from a fixed seed, its bias filled with `bias`, on a random batch:
    the eager output, the gradients of a weighted sum of it, the graphs a dynamic=False
    compile needs for three batches of that shape, and the graph count and break reasons
    (explain's, asked only when the first call compiled more than one frame or graph: one
    compile fewer for a gate that traces whole)."""
    fresh_dynamo()
    torch.manual_seed(seed)
    gate = comp.NormalizedGate(dim)
    with torch.no_grad():
        gate.lin.bias.fill_(bias)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(batch, dim, generator=g) * (3.0 if bias == 0.0 else 1.0)
    x_in = x.clone().requires_grad_(True)
    out = gate(x_in)
    mix = torch.randn(batch, dim, generator=g)
    (out * mix).sum().backward()
    grads = {"x": x_in.grad, "weight": gate.lin.weight.grad, "bias": gate.lin.bias.grad}
    log = GraphLog()
    # Not fullgraph=True: it traces float(tensor) as a symbolic scalar, hiding the break
    # this task is about.
    compiled = torch.compile(gate, backend=log, dynamic=False)
    with torch.no_grad():
        compiled(torch.randn(batch, dim, generator=g))
        first_call = (len(log.calls), counters["frames"]["ok"])  # a break adds a frame
        for _ in range(2):
            compiled(torch.randn(batch, dim, generator=g))
    graph_count, breaks = 1, []
    if first_call != (1, 1):
        fresh_dynamo()
        report = torch._dynamo.explain(gate)(x)
        graph_count = report.graph_count
        breaks = [str(getattr(r, "reason", r)).splitlines()[0] for r in report.break_reasons]
    fresh_dynamo()
    weights = {"weight": gate.lin.weight.detach().clone(), "bias": gate.lin.bias.detach().clone()}
    return {
        "graph_count": graph_count,
        "breaks": breaks,
        "x": x,
        "mix": mix,
        "weights": weights,
        "out": out.detach(),
        "grads": grads,
        "graph_calls": list(log.calls),
    }


def gate_maths(weights, x, mix):
    """The gate's intended maths, written out with autograd: (output, gradients of sum(out * mix))."""
    w = weights["weight"].clone().requires_grad_(True)
    b = weights["bias"].clone().requires_grad_(True)
    x = x.clone().requires_grad_(True)
    h = x @ w.T + b
    kept = h.clamp(min=0) if h.mean() > 0 else h.clamp(max=0)
    out = kept / h.abs().amax()
    (out * mix).sum().backward()
    return out.detach(), {"x": x.grad, "weight": w.grad, "bias": b.grad}


def check_gate(seen, what):
    assert seen["graph_count"] == 1 and not seen["breaks"], (
        f"torch._dynamo.explain(NormalizedGate)(x) found {seen['graph_count']} graphs and "
        f"{len(seen['breaks'])} graph break(s): {seen['breaks'][:3]}. .item() and print() leave the "
        "graph, and a Python `if` on a tensor value is a data-dependent branch — keep values as "
        "tensors and choose with torch.where"
    )
    calls = seen["graph_calls"]
    assert len(calls) == 1, (
        f"compiled with dynamic=False, NormalizedGate needed {len(calls)} graphs for three "
        "batches of one shape: a value pulled out of a tensor (.item(), float()) is baked into "
        "the graph and guarded on, so every new batch recompiles"
    )
    assert calls == [3], (
        f"compiled with dynamic=False, NormalizedGate's one graph served {calls[0]} of three "
        "batches of one shape: the others ran outside the compiled graph"
    )
    out, grads = gate_maths(seen["weights"], seen["x"], seen["mix"])
    judge.close(
        seen["out"],
        out,
        f"NormalizedGate(x) ({what}) differs from the gate's maths. The branch must depend on "
        "the sign of the batch's mean (one number for the whole batch), and the division on the "
        "largest |activation| of the whole batch",
        atol=1e-6,
        rtol=1e-5,
    )
    for name, expected in grads.items():
        judge.close(
            seen["grads"][name],
            expected,
            f"the gradient with respect to {name} ({what}) differs from the gate's maths. The "
            "peak stays in the graph as a 0-d tensor, so the gradient flows through the division "
            "by it (a detached or Python-float peak gives the right output, the wrong gradient)",
            atol=1e-5,
            rtol=1e-4,
        )


@pytest.mark.task("ch09a.3")
@pytest.mark.points(3)
@pytest.mark.parametrize("bias", [2.0, -2.0], ids=["mean-positive", "mean-negative"])
def test_gate_compiles_to_one_graph_and_keeps_both_branches(bias):
    with because("NormalizedGate(8) raised on a batch of 8"):
        seen = gate_seen(8, 8, bias, 3)
    check_gate(seen, f"bias {bias}, batch mean {'>' if bias > 0 else '<'} 0")


# ---------------------------------------------------------------- ch09a.4 guard_reasons


@probe
def reasons_of(name, first, second, kwargs, runs=1, warm=False):
    """guard_reasons(fn, first, second, **kwargs), `runs` times in a row, from a fresh process
    state (after compiling fn on `second` first when warm): the (argument, kind, text) triples
    of each answer."""
    fresh_dynamo()
    fn = FUNCTIONS[name]
    kwargs = dict(kwargs)
    if warm:  # a graph for `second` already sits in Dynamo's cache
        torch.compile(fn, **{**dict(kwargs), "backend": "eager"})(*second)
    answers = []
    for _ in range(runs):
        got = comp.guard_reasons(fn, tuple(first), tuple(second), **{"backend": "eager", **kwargs})
        answers.append(reason_triples(got))
    return answers


def reason_triples(got):
    """The (argument, kind, text) of each item of guard_reasons's answer ``got`` when it is
    a list; otherwise the name of the type it is (not an answer)."""
    if type(got) is not list:
        return type(got).__name__
    return [tuple(getattr(r, field, None) for field in ("argument", "kind", "text")) for r in got]


KINDS = ("shape", "dtype", "value", "other")


def checked(answer, call: str):
    """``answer`` (a probe's reason_triples) once shown to be guard_reasons's kind of
    answer: a list of GuardReason, each with a string argument, one of KINDS and Dynamo's
    text (so an empty tensor, or a list of NaN, never reads as "no guard failed")."""
    assert type(answer) is list, (
        f"{call} returned a {answer}, expected a list of GuardReason(argument, kind, text)"
    )
    for argument, kind, text in answer:
        assert (
            type(argument) is str and type(kind) is str and kind in KINDS and type(text) is str
        ), (
            f"{call} returned the item {(argument, kind, text)!r}: each GuardReason names an "
            f"argument (a str), a kind among {KINDS} and Dynamo's failure text (a str)"
        )
    return answer


def pairs(answer, call: str = "guard_reasons"):
    return [(argument, kind) for argument, kind, _ in checked(answer, call)]


@pytest.mark.task("ch09a.4")
@pytest.mark.points(3)
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
    with because("guard_reasons(x * n + 1, ...) raised"):
        (answer,) = reasons_of(
            "scale_by", (torch.ones(4, 4), 2), second, {"backend": "eager", "dynamic": False}
        )
    assert pairs(answer) == expected, (
        f"guard_reasons(x * n + 1, first=(ones(4, 4), 2), second=({tuple(second[0].shape)} "
        f"{second[0].dtype}, {second[1]}), dynamic=False) gave {pairs(answer)}, expected {expected}: "
        "read the guard-failure text Dynamo recorded on the second call (\"tensor 'x' size "
        'mismatch ...", "dtype mismatch", "n == 2") and name the argument it watched'
    )
    assert all(isinstance(text, str) and arg in text for arg, _, text in answer), (
        f"each GuardReason.text should be Dynamo's failure message, which names the argument; got {answer}"
    )


@pytest.mark.task("ch09a.4")
@pytest.mark.points(4)
def test_guard_reasons_reads_the_guards_not_the_inputs():
    with because("guard_reasons(x * 2 ignoring n, ...) raised"):
        answers = reasons_of(
            "ignores_n", (torch.ones(3, 3), 1), (torch.ones(3, 3), 7), {"dynamic": False}, runs=2
        )
    assert not loads_inductor("guard_reasons", "scale", [(torch.ones(2),), (torch.ones(2),)]), (
        "guard_reasons given no backend compiled with inductor: the backend defaults to "
        '"eager" (compile_kwargs.pop("backend", "eager"))'
    )
    got = [pairs(a, "guard_reasons(x * 2 ignoring n, ...)") for a in answers]
    assert got == [[], []], (
        f"guard_reasons(fn that never reads n, n=1 then n=7) gave {got}; "
        "expected [] each time: the trace never used n, so Dynamo installed no guard on it and "
        "the compiled code is reused — report the guards that failed, not the inputs that changed"
    )
    with because("guard_reasons(x * n + 1, ...) raised"):  # silence counts beside speech
        (reads_n,) = reasons_of(
            "scale_by", (torch.ones(3, 3), 1), (torch.ones(3, 3), 7), {"dynamic": False}
        )
    assert pairs(reads_n, "guard_reasons(x * n + 1, ...)") == [("n", "value")], (
        f"guard_reasons(x * n + 1, n=1 then n=7) gave {pairs(reads_n)}, expected "
        "[('n', 'value')]: a function that does read n is guarded on its value, and that guard "
        "fails on the second call"
    )
