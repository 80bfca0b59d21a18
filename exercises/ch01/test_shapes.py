"""Public tests for ch01 — run with `pytest exercises/ch01` (add `--impl solutions` to
see the reference pass). Sizes are chosen square on purpose: a wrong axis still runs."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: the student's process of a split run cannot import it (nor needs it)
    from harness.evidence import brief, first_difference
except ImportError:
    pass

sh = chapter_module("ch01", "shapes")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "INT_OF_SIZE LIBRARY_BROADCASTS PROGRAMS VIEW_PAIRS _TensorWatcher changes "
    "crashes_at_its_second_op small_program snapshot the_books_program with_empty"
)


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- ch01.1 broadcast_shape -------------------------------------------------------


def is_int_tuple(got):
    """A tuple whose entries are Python ints (not floats, not tensors)."""
    return isinstance(got, tuple) and all(type(s) is int for s in got)


@pytest.mark.task("ch01.1")
@pytest.mark.parametrize(
    "a, b",
    [
        ((8, 1, 6, 1), (7, 1, 5)),
        ((2, 3), (3,)),
        ((3, 1), (1, 4)),
        ((), (2, 3)),
        ((4, 4), (4, 1)),
        ((3,), (2, 3)),
        ((0,), (1,)),
    ],
)
def test_broadcast_shape_examples(a, b):
    want = tuple(torch.broadcast_shapes(a, b))
    got = sh.broadcast_shape(a, b)
    assert got == want and is_int_tuple(got), (
        f"broadcast_shape({a}, {b}) returned {got!r}, torch.broadcast_shapes gives {want}: "
        "line the shapes up from the right (missing leading dims count as 1); a size-1 dim "
        "stretches to the other size, even to 0; return a tuple of ints"
    )


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_rejects_and_names_the_dimension():
    with pytest.raises(ValueError) as info:
        sh.broadcast_shape((5, 3), (4,))
    msg = str(info.value)
    assert (
        re.search(r"\b3\b", msg) and re.search(r"\b4\b", msg) and re.search(r"dim|axis", msg, re.I)
    ), (
        f"broadcast_shape((5, 3), (4,)) raised ValueError({msg!r}); the message should name the "
        "dimension that disagrees and its two sizes (3 and 4), so the reader knows where to look"
    )


@pytest.mark.task("ch01.1")
@pytest.mark.parametrize("a, b", [((2,), (0,)), ((3, 2), (2, 3))])
def test_broadcast_shape_rejects_sizes_that_are_neither_equal_nor_one(a, b):
    try:
        got = sh.broadcast_shape(a, b)
    except ValueError:
        return
    pytest.fail(
        f"broadcast_shape({a}, {b}) returned {got!r} instead of raising ValueError: two sizes "
        "broadcast only when they are equal or one of them is 1 (a 1 stretches to anything, 0 "
        "included; a 0 stretches to nothing)"
    )


class _TensorWatcher(torch.overrides.TorchFunctionMode):
    """Notes the name of every torch function, Tensor method or operator called."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


LIBRARY_BROADCASTS = [  # (module, name) of the library routines that apply the rule for you
    (torch, "broadcast_shapes"),
    (torch, "broadcast_tensors"),
    (torch, "broadcast_to"),
    (np, "broadcast_shapes"),
    (np, "broadcast"),
    (np, "broadcast_to"),
    (np, "broadcast_arrays"),
]


@probe
def broadcast_by_hand(a, b):
    """broadcast_shape(a, b) while the library's broadcasting routines raise and a torch
    function mode watches: its result (or the error's text) and the torch calls it made."""
    saved = [(mod, name, getattr(mod, name)) for mod, name in LIBRARY_BROADCASTS]

    def refuse(*args, **kwargs):
        raise RuntimeError("library broadcasting is switched off in this test")

    watcher = _TensorWatcher()
    try:
        for mod, name, _ in saved:
            setattr(mod, name, refuse)
        with watcher:
            try:
                result = sh.broadcast_shape(a, b)
            except NotImplementedError:
                raise
            except Exception as exc:  # noqa: BLE001 - what it raised is the observation
                result = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        for mod, name, original in saved:
            setattr(mod, name, original)
    return result, watcher.calls


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_applies_the_rule_by_hand():
    result, calls = broadcast_by_hand((8, 1, 6, 1), (7, 1, 5))
    from harness import source_rules  # the tests' side reads the submitted source itself

    rule = source_rules.NO_BROADCAST_HELPER
    written = source_rules.broken("ch01", "shapes", "broadcast_shape", rule)
    assert written is None, (
        f"{written}: the rule works on the sizes alone, by hand, so {rule.hint}"
        + ("" if calls or result != (8, 7, 6, 5) else source_rules.UNSEEN)
    )
    assert result == (8, 7, 6, 5), (
        f"with torch's and numpy's broadcasting routines switched off, broadcast_shape((8, 1, 6, "
        f"1), (7, 1, 5)) gave {result!r}: apply the rule yourself (pad with leading 1s, compare "
        "from the right), do not ask torch.broadcast_shapes or numpy"
    )
    assert not calls, (
        f"broadcast_shape called torch ({', '.join(sorted(set(calls)))}): the rule works on the "
        "sizes alone; building tensors and letting torch broadcast them is not doing it by hand"
    )


# ---- ch01.2 pairwise_sq_dists ------------------------------------------------------


def loop_sq_dists(x, y):
    """The slow obvious reference: one pair at a time."""
    out = torch.empty(x.shape[0], y.shape[0], dtype=torch.float64)
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = ((x[i].double() - y[j].double()) ** 2).sum()
    return out


def dists_problem(x, y, got):
    """Why ``got`` is not the (N, M) matrix of squared distances (None when it is)."""
    n, m = x.shape[0], y.shape[0]
    if type(got) is not torch.Tensor:
        return f"returned {brief(got)}, not a plain tensor"
    if tuple(got.shape) != (n, m):
        return (
            f"returned shape {tuple(got.shape)}, expected ({n}, {m}): x - y pairs row i with "
            "row i only; to pair every row with every row, give x and y different broadcast "
            "axes (x[:, None] - y[None]); one entry per (row of x, row of y) pair"
        )
    if not got.is_floating_point():
        return f"returned dtype {got.dtype}: squared distances are floating-point values"
    want = loop_sq_dists(x, y)
    # matmul-form answers (|x|^2 + |y|^2 - 2 x.y) lose a little to cancellation: allow it
    scale = float(want.abs().max()) if want.numel() else 0.0
    err = float((got.double() - want).abs().max()) if want.numel() else 0.0
    if not err <= 1e-4 * scale + 1e-5:
        return (
            f"differs from the pair-by-pair sum of squared differences ({first_difference(got, want)}; "
            f"largest distance {scale:.3g}): out[i, j] must be the sum over features of "
            "(x[i] - y[j])**2; check which axis you sum over, that you square before summing, "
            "and the sign of the cross term"
        )
    return None


@pytest.mark.task("ch01.2")
@pytest.mark.points(2)  # its third point went to the hidden stays-on-the-device test
def test_pairwise_sq_dists_with_n_equal_m_equal_d():
    x = torch.randn(5, 5, generator=gen(1))
    y = torch.randn(5, 5, generator=gen(2))
    problem = dists_problem(x, y, sh.pairwise_sq_dists(x, y))
    assert problem is None, f"pairwise_sq_dists(x[5, 5], y[5, 5]) {problem}"


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_rectangular():
    x = torch.randn(3, 2, generator=gen(3))
    y = torch.randn(7, 2, generator=gen(4))
    with because(
        "pairwise_sq_dists(x[3, 2], y[7, 2]) raised: x - y only broadcasts when N == M; give x "
        "and y different broadcast axes, x[:, None, :] - y[None, :, :] is (N, M, D)"
    ):
        got = sh.pairwise_sq_dists(x, y)
    problem = dists_problem(x, y, got)
    assert problem is None, f"pairwise_sq_dists(x[3, 2], y[7, 2]) {problem}"


# ---- ch01.3 batch_linear -----------------------------------------------------------


@pytest.mark.task("ch01.3")
@pytest.mark.points(2)  # its third point went to the hidden stays-on-the-device test
def test_batch_linear_square_sizes_match_f_linear():
    x = torch.randn(4, 4, generator=gen(5))
    W = torch.randn(4, 4, generator=gen(6))
    b = torch.randn(4, generator=gen(7))
    got = sh.batch_linear(x, W, b)
    want = F.linear(x, W, b)
    judge.close(
        got,
        want,
        "batch_linear(x[4, 4], W[4, 4], b[4]) must equal F.linear, of shape (4, 4): "
        "the weight is stored [out, in] (one row per output), so the product is x @ W.T; check "
        "also that b is added per output column, not per example row",
        atol=1e-5,
        rtol=1e-5,
    )


@probe
def linear_layer_output(seed, n_in, n_out, x):
    """batch_linear with the parameters of a freshly seeded nn.Linear."""
    torch.manual_seed(seed)
    layer = torch.nn.Linear(n_in, n_out)
    with torch.no_grad():
        return sh.batch_linear(x, layer.weight, layer.bias)


def seeded_layer(seed, n_in, n_out):
    """The same nn.Linear, built here (the trusted side) from the same seed."""
    torch.manual_seed(seed)
    return torch.nn.Linear(n_in, n_out)


@pytest.mark.task("ch01.3")
def test_batch_linear_uses_an_nn_linear_layer_s_parameters():
    x = torch.randn(5, 3, generator=gen(8))
    with because(
        "batch_linear(x[5, 3], layer.weight[2, 3], layer.bias[2]) raised: the weight is "
        "[out, in], so x @ W cannot even multiply here; the product is x @ W.T"
    ):
        got = linear_layer_output(0, 3, 2, x)
    with torch.no_grad():
        want = seeded_layer(0, 3, 2)(x)
    judge.close(
        got,
        want,
        "batch_linear(x[5, 3], layer.weight[2, 3], layer.bias[2]) must equal layer(x) of "
        "shape (5, 2): out[k, o] = x[k] . W[o] + b[o]",
        atol=1e-5,
        rtol=1e-5,
    )


# ---- ch01.4 trace_shapes -----------------------------------------------------------


def small_program(a, w):
    h = a @ w  # (4, 3)
    h = h.transpose(0, 1)  # (3, 4)
    h = (h * 2).exp()  # (3, 4), (3, 4)
    return h.sum(-1).unsqueeze(0)  # (3,), (1, 3)


def the_books_program(x, y, layer):
    pred = layer(x)  # (B, 1)
    return ((pred - y) ** 2).mean()  # y is (B,): pred - y silently becomes (B, B)


def crashes_at_its_second_op(x):
    h = x.sum(0)  # (4,)
    return h.view(3, 2)  # 4 elements cannot be viewed as 3 x 2


PROGRAMS = {"small": small_program, "crash": crashes_at_its_second_op}


@probe
def traced(program, *args):
    """trace_shapes of the module-level program named ``program`` on ``args``."""
    return sh.trace_shapes(PROGRAMS[program], *args)


@probe
def traced_book(seed, x, y):
    """trace_shapes of the book's program with a freshly seeded nn.Linear(3, 1)."""
    torch.manual_seed(seed)
    layer = torch.nn.Linear(3, 1)
    return sh.trace_shapes(the_books_program, x, y, layer)


def shapes_of(trace):
    return [tuple(s) for _, s in trace]


CRASH_ESCAPED = (
    "trace_shapes let fn's crash escape; catch it and return the ops that completed before "
    "the crash: they are the evidence"
)


@pytest.mark.task("ch01.4")
@pytest.mark.points(3)
def test_trace_shapes_records_every_op_in_order():
    a, w = torch.randn(4, 5, generator=gen(11)), torch.randn(5, 3, generator=gen(12))
    trace = traced("small", a, w)
    shapes = shapes_of(trace)
    want = [(4, 3), (3, 4), (3, 4), (3, 4), (3,), (1, 3)]
    assert shapes == want, (
        f"trace_shapes(small_program) recorded shapes {shapes}, expected {want} (matmul, "
        "transpose, mul, exp, sum, unsqueeze): record the output of every torch call while fn "
        "runs — operators and Tensor methods too — not only its inputs or its final result"
    )
    assert all(isinstance(name, str) and name for name, _ in trace), (
        f"every trace entry should be (op_name: str, shape); got {brief(trace)}"
    )


@pytest.mark.task("ch01.4")
def test_trace_shapes_finds_the_silent_broadcast():
    x, y = torch.randn(6, 3, generator=gen(13)), torch.randn(6, generator=gen(14))
    trace = traced_book(0, x, y)
    square = [i for i, (_, s) in enumerate(trace) if tuple(s) == (6, 6)]
    assert square, (
        f"trace_shapes of the book's program recorded {brief(trace)}: no op produced (6, 6), yet "
        "pred (6, 1) minus y (6,) broadcasts to (6, 6); every op fn performs must be recorded"
    )
    name = trace[square[0]][0]
    subs = [tuple(s) for op, s in trace if "sub" in op.lower()]
    assert "sub" in name.lower(), (
        f"the first (6, 6) tensor in the trace comes from op {name!r}; it should be the "
        "subtraction pred - y, where the broadcast happens, "
        + (
            f"but the trace records the subtraction as {subs[0]}: record the shape each op "
            "produces (its output), not one of its inputs"
            if subs
            else "but the trace has no subtraction: every op fn performs must be recorded"
        )
    )


@pytest.mark.task("ch01.4")
@pytest.mark.points(2)
def test_trace_shapes_survives_a_crashing_program():
    with because(CRASH_ESCAPED):
        trace = traced("crash", torch.randn(5, 4, generator=gen(15)))
    shapes = shapes_of(trace)
    one_sum = len(trace) == 1 and "sum" in str(trace[0][0]).lower()
    assert shapes == [(4,)], (
        f"trace_shapes on a function that fails at its second op returned {shapes}, expected "
        "[(4,)]: "
        + (
            "the op that completed (sum over dim 0 of a (5, 4) tensor) is there, but its "
            "output has shape (4,) — record the output of each op, not its input"
            if one_sum
            else "catch the exception and return what was recorded before it — the trace is "
            "the evidence"
        )
    )


# ---- ch01.5 first_divergence -------------------------------------------------------


@pytest.mark.task("ch01.5")
@pytest.mark.points(2)
def test_first_divergence_is_where_it_became_wrong_not_where_it_crashed():
    trace = [("linear", (6, 1)), ("sub", (6, 6)), ("pow", (6, 6)), ("mean", ())]
    expected = [(6, 1), (6, 1), (6, 1), ()]
    got = sh.first_divergence(trace, expected)
    assert got == 1, (
        f"first_divergence returned {got!r} for a trace whose shapes go wrong at op 1 (sub gives "
        "(6, 6), not (6, 1)) and stay wrong after it: return the index of the FIRST op whose "
        "shape differs"
    )


@pytest.mark.task("ch01.5")
def test_first_divergence_none_when_all_agree():
    trace = [("matmul", (4, 3)), ("transpose", (3, 4)), ("sum", (3,))]
    got = sh.first_divergence(trace, [(4, 3), (3, 4), (3,)])
    assert got is None, f"first_divergence returned {got!r} when every shape agrees; expected None"


@pytest.mark.task("ch01.5")
@pytest.mark.points(2)
def test_first_divergence_when_the_program_stopped_early():
    trace = [("sum", (4,))]
    got = sh.first_divergence(trace, [(4,), (3, 2), (2, 3)])
    assert got == 1, (
        f"first_divergence returned {got!r} for a trace of 1 op against 3 expected ops; expected "
        "1 — the first op that never produced its shape (zip stops at the shorter list, so "
        "compare the lengths too)"
    )


# ---- ch01.6 is_view_of -------------------------------------------------------------


def with_empty(window):
    """(window(e), e) for a fresh empty tensor e = torch.empty(0, 3)."""
    e = torch.empty(0, 3)
    return window(e), e


VIEW_PAIRS = {  # case: how to make (a, b) from x = arange(12).reshape(3, 4); e = empty(0, 3)
    "x.t(), x": lambda x: (x.t(), x),
    "x.clone(), x": lambda x: (x.clone(), x),
    "x[:1], x[1:]": lambda x: (x[:1], x[1:]),
    "x[1:], x": lambda x: (x[1:], x),
    "e.clone(), e": lambda x: with_empty(lambda e: e.clone()),
    "x[:, 2], x": lambda x: (x[:, 2], x),
    "x.t().contiguous(), x": lambda x: (x.t().contiguous(), x),
    "e.t(), e": lambda x: with_empty(lambda e: e.t()),
    "x.view(4, 3), x": lambda x: (x.view(4, 3), x),
    "torch.empty(0), torch.zeros(0)": lambda x: (torch.empty(0), torch.zeros(0)),
    "x[:, ::2], x[:, 1::2]": lambda x: (x[:, ::2], x[:, 1::2]),
    "torch.arange(12.0).reshape(3, 4), x": lambda x: (torch.arange(12.0).reshape(3, 4), x),
    "x[2:2], x": lambda x: (x[2:2], x),
    "x.unsqueeze(0), x": lambda x: (x.unsqueeze(0), x),
}
# What each case is, on the trusted side only: the probe asks about every case at once, so
# neither its arguments nor its caller say which answer a test expects.
VIEW_CASES = {
    "views": ["x.t(), x", "x[1:], x", "x[:, 2], x", "x.view(4, 3), x", "x.unsqueeze(0), x"],
    "copies": ["x.clone(), x", "x.t().contiguous(), x", "torch.arange(12.0).reshape(3, 4), x"],
    "disjoint": ["x[:1], x[1:]", "x[:, ::2], x[:, 1::2]"],  # one storage, no shared element
    "empty views": ["e.t(), e", "x[2:2], x"],  # an empty window onto a storage
    "empty copies": ["torch.empty(0), torch.zeros(0)", "e.clone(), e"],  # storages of their own
}


@probe
def view_verdicts():
    """is_view_of(a, b) for every case of VIEW_PAIRS, by case."""
    verdicts = {}
    for case, make in VIEW_PAIRS.items():
        x = torch.arange(12.0).reshape(3, 4)
        verdicts[case] = sh.is_view_of(*make(x))
    return verdicts


def verdicts_on(kind):
    """(case, is_view_of's verdict) for the cases of ``VIEW_CASES[kind]``, once it is
    clear that is_view_of tells the cases apart at all."""
    verdicts = view_verdicts()
    said = {repr(v) for v in verdicts.values()}
    assert len(said) > 1, (
        f"is_view_of answered {said.pop()} for all {len(verdicts)} pairs, views and copies "
        "alike: it must tell a window onto x's storage from a tensor with a storage of its own"
    )
    return [(case, verdicts[case]) for case in VIEW_CASES[kind]]


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_views():
    for label, verdict in verdicts_on("views"):
        assert verdict is True, (
            f"is_view_of({label}) is {verdict!r}, not True, but a is a view of x: it reads "
            "x's memory through its own offset and strides (compare storages, not the first "
            "element's address)"
        )


@pytest.mark.task("ch01.6")
def test_is_view_of_copies():
    for label, verdict in verdicts_on("copies"):
        assert verdict is False, (
            f"is_view_of({label}) is {verdict!r}, not False, but a is a copy with its "
            "own memory (equal values do not make a view)"
        )


@pytest.mark.task("ch01.6")
def test_is_view_of_windows_that_do_not_overlap():
    for label, verdict in verdicts_on("disjoint"):
        assert verdict is True, (
            f"is_view_of({label}) is {verdict!r}, not True: the two windows share no "
            "element but lie in one storage; the question is which storage each reads, not "
            "whether a write into one shows up in the other (compare untyped_storage())"
        )


@pytest.mark.task("ch01.6")
def test_is_view_of_empty_tensors():
    for label, verdict in verdicts_on("empty copies"):
        assert verdict is False, (
            f"is_view_of({label}) (e = torch.empty(0, 3)) is {verdict!r}, not False: each has a storage of its own. "
            "Every storage without bytes reports data_ptr() 0, so equal addresses prove "
            "nothing for empty storages: compare the storage objects themselves there"
        )
    for label, verdict in verdicts_on("empty views"):
        assert verdict is True, (
            f"is_view_of({label}) (e = torch.empty(0, 3)) is {verdict!r}, not True: an empty tensor has no elements "
            "to write, yet it is a window onto that storage (a write-and-watch test or a "
            "numel() == 0 shortcut misses it)"
        )


INT_OF_SIZE = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def snapshot(t):
    """What a function that only reads ``t`` must leave as it was: its bits (nan included),
    version counter, shape, strides and requires_grad."""
    bits = t.detach().clone()
    if bits.is_floating_point() or bits.is_complex():
        bits = bits.view(INT_OF_SIZE[bits.element_size()])
    return bits, t._version, t.shape, t.stride(), t.requires_grad


def changes(name, t, before):
    """What about tensor ``t`` (called ``name``) differs from ``snapshot(t)`` taken before."""
    bits, version, shape, stride, grad = before
    notes = []
    if t.shape != shape or t.stride() != stride:
        notes.append(f"{name}'s shape or strides")
    elif not judge.is_equal(snapshot(t)[0], bits):
        notes.append(f"{name}'s values")
    if t._version != version:
        notes.append(f"{name}'s version counter (an in-place write)")
    if t.requires_grad != grad:
        notes.append(f"{name}.requires_grad")
    return notes


@probe
def view_check_side_effects():
    """is_view_of on pairs made from a leaf x that requires grad (and whose value a graph
    saved): for each pair, what about a or b differs afterwards, whether that graph can
    still run backward, and each pair's verdict."""
    x = torch.arange(12.0).reshape(3, 4).requires_grad_()
    saved = (x * x).sum()  # mul saves x for its backward pass
    pairs = {
        "x.t(), x": lambda: (x.t(), x),
        "x[:1], x[1:]": lambda: (x[:1], x[1:]),
        "x.detach().clone(), x": lambda: (x.detach().clone(), x),
    }
    changed, verdicts = {}, {}
    for label, make in pairs.items():
        a, b = make()
        before = [snapshot(a), snapshot(b)]
        verdicts[label] = sh.is_view_of(a, b)
        changed[label] = changes("a", a, before[0]) + changes("b", b, before[1])
    try:
        saved.backward()
        backward = "ran"
    except RuntimeError as exc:
        backward = str(exc).splitlines()[0][:200]
    return changed, backward, verdicts


SIDE_EFFECT_VERDICTS = {"x.t(), x": True, "x[:1], x[1:]": True, "x.detach().clone(), x": False}


@pytest.mark.task("ch01.6")
def test_is_view_of_leaves_its_arguments_unchanged():
    with because(
        "is_view_of raised on a leaf that requires grad (or a view of it): it should only "
        "read the storages, never write into a tensor to see what moves"
    ):
        changed, backward, verdicts = view_check_side_effects()
    for label, notes in changed.items():
        assert not notes, (
            f"is_view_of({label}) changed {', '.join(notes)}: it must only read. Writing into "
            "a tensor and watching the other one changes the caller's data, and even a write "
            "that is undone bumps the version counter autograd checks; compare storages"
        )
    assert backward == "ran", (
        f"after is_view_of, a graph that had saved x could no longer run backward ({backward}): "
        "is_view_of wrote into x in place; it must only read"
    )
    assert verdicts == SIDE_EFFECT_VERDICTS, (
        f"on a leaf x that requires grad, is_view_of gave {verdicts}; expected "
        f"{SIDE_EFFECT_VERDICTS} (leaving the arguments alone counts only beside a correct answer)"
    )


# ---- ch01.7 standardize_channels_ (repair) -----------------------------------------

VIEW_FAILED = (
    "standardize_channels_ raised; if it is the broken program's .view: x.transpose(0, 1) only "
    "swaps strides, so its memory is no longer in row-major order and .view cannot regroup "
    "it; see course/ch01.md#repairing-the-view"
)


@probe
def standardized(x, eps=None, layout="contiguous"):
    """standardize_channels_ on x (stored in ``layout``): what it returned, x afterwards,
    whether what it returned is x itself and whether x still uses the memory it had."""
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    memory = x.untyped_storage().data_ptr()
    got = sh.standardize_channels_(x) if eps is None else sh.standardize_channels_(x, eps=eps)
    same_memory = x.untyped_storage().data_ptr() == memory
    return {"returned": got, "x": x, "is_x": got is x, "same_memory": same_memory}


@pytest.mark.task("ch01.7")
@pytest.mark.points(3)
def test_standardize_channels_matches_batch_norm():
    x = torch.randn(4, 4, 3, 3, generator=gen(9)) * 3 + torch.arange(4.0).view(1, 4, 1, 1)
    want = F.batch_norm(x, None, None, training=True, eps=1e-5)
    with because(VIEW_FAILED):
        got = standardized(x)["returned"]
    judge.close(
        got,
        want,
        "standardize_channels_(x[4, 4, 3, 3]) must equal F.batch_norm(x, training=True): "
        "each channel c must be standardized over x[:, c] (all examples and pixels); viewing x "
        "as (C, -1) without the transpose groups by example instead, which runs when B == C",
        atol=1e-4,
        rtol=1e-5,
    )


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
def test_standardize_channels_works_in_place():
    x = torch.randn(4, 4, 3, 3, generator=gen(10)) + 5.0
    want = F.batch_norm(x, None, None, training=True, eps=1e-5)
    with because(VIEW_FAILED):
        seen = standardized(x)
    judge.close(
        seen["x"],
        want,
        "after standardize_channels_(x), x itself is not standardized: reshape (or .contiguous()) "
        "of a transposed tensor makes a copy, so in-place writes into it never reach x; compute "
        "the statistics, then write into x itself (broadcasting with keepdim, or x.copy_)",
        atol=1e-4,
        rtol=1e-5,
    )
    assert seen["same_memory"], (
        "standardize_channels_(x) gave x new memory (x.data = ... or x.set_ swaps its storage): "
        "in place means writing into the memory x already has (sub_/div_ on x or a view of it, "
        "or x.copy_), so every view of x sees the change"
    )
    assert seen["is_x"], (
        "standardize_channels_(x) must return x itself (the tensor it changed in place), not a "
        "new tensor"
    )
