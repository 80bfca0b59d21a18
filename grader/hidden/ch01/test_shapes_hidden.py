"""Hidden tests for ch01: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import operator
import random
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from exercises.ch01.test_shapes import (  # helpers and probes shared with the public twin
    CRASH_ESCAPED,
    VIEW_FAILED,
    changes,
    dists_problem,
    is_int_tuple,
    shapes_of,
    snapshot,
    standardized,
)
from harness import devices, judge
from harness.layouts import LAYOUTS, laid_out
from harness.probe import because, probe
from harness.target import chapter_module, reference_module

try:  # test bodies only: the student's process of a split run cannot import these
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
except ImportError:
    pass

sh = chapter_module("ch01", "shapes")
ref = reference_module("ch01", "shapes")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "CRASH_FORMS flattened_or_copied product_or_fallback product_or_negated product_then_sum "
    "reshaped_then_summed row_or_last_row run_crash_forms "
    "EDIT_FORMS HIDDEN_PAIRS HIDDEN_PROGRAMS OPERATOR_FORMS Tagged add_into_a_column run_operator_forms step_a_parameter changes crashes_at_its_third_op factories_and_tuples "
    "on_empty meta_pair other_program raises_its_own_error reshapes_in_place rows_summed shapes_of single_sum snapshot "
    "WINDOWS WINDOW_LAYOUTS zeros_of"
)


def gen(seed):
    return torch.Generator().manual_seed(seed)


@probe
def in_layout(name, layout, *args):
    """sh.<name>(*args) with every tensor argument rebuilt, same values, in ``layout``
    (harness.layouts: a transposed, strided or offset window of a bigger tensor)."""
    laid = [laid_out(a, layout) if isinstance(a, torch.Tensor) else a for a in args]
    return getattr(sh, name)(*laid)


# The layouts and dtypes a caller's tensors come in: what the contract leaves free.
DOMAIN = dict(layout=st.sampled_from(LAYOUTS), dtype=st.sampled_from(["float32", "float64"]))


def kept_precision(dtype):
    """How closely a result on ``dtype`` inputs must match a float64 reference, and the
    dtype it must have: float64 inputs keep float64 (torch's own ops do), so rounding them
    to float32 anywhere (~1e-7 relative) is an error, while any float64 formulation
    (cancellation in |x|^2 + |y|^2 - 2 x.y included, ~1e-15) is within."""
    if dtype == "float64":
        return dict(atol=1e-9, rtol=1e-9, dtype=torch.float64)
    return dict(atol=1e-4, rtol=1e-4, dtype="float")


FLOAT64_KEPT = (
    "; float64 inputs must give a float64 result computed in float64, as torch's own ops "
    "do: look for a .float(), a float32 constant tensor or a torch.tensor(...) without "
    "dtype that rounds them to float32"
)


# ---- ch01.1 broadcast_shape -------------------------------------------------------


@probe
def broadcast_outcomes(pairs, kinds=None):
    """broadcast_shape on each pair: {"value": result} or what it raised. ``kinds`` names,
    per pair, the sequence type each shape is handed over as ("tuple", "list", "size" for
    torch.Size); tuples when it is None."""
    build = {"tuple": tuple, "list": list, "size": torch.Size}
    out = []
    for i, (a, b) in enumerate(pairs):
        if kinds is not None:
            a, b = build[kinds[i][0]](a), build[kinds[i][1]](b)
        try:
            out.append({"value": sh.broadcast_shape(a, b)})
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append(
                {
                    "raised": type(exc).__name__,
                    "value_error": isinstance(exc, ValueError),
                    "message": str(exc)[:300],
                }
            )
    return out


def torch_broadcast(a, b):
    try:
        return tuple(torch.broadcast_shapes(a, b))
    except RuntimeError:
        return None


def names_a_clash(a, b, message):
    """The message names a dimension and both sizes of some dimension that clashes."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    clashes = [(x, y) for x, y in zip(pa, pb) if x != y and 1 not in (x, y)]
    sizes_named = any(
        re.search(rf"(?<!\d){x}(?!\d)", message) and re.search(rf"(?<!\d){y}(?!\d)", message)
        for x, y in clashes
    )
    return bool(sizes_named and re.search(r"dim|axis", message, re.I))


def judge_broadcasts(pairs, kinds=None):
    """Compare broadcast_shape with torch.broadcast_shapes on every pair (each shape handed
    over as the sequence type ``kinds`` names, tuples by default); count the outcomes."""
    outcomes = broadcast_outcomes(pairs, kinds) if kinds is not None else broadcast_outcomes(pairs)
    compatible = clashing = 0
    for i, ((a, b), seen) in enumerate(zip(pairs, outcomes)):
        if kinds is not None:  # the call as it was made, for the messages
            a, b = (as_given(s, kind) for s, kind in zip((a, b), kinds[i]))
        want = torch_broadcast(a, b)
        if want is None:
            clashing += 1
            assert "raised" in seen, (
                f"broadcast_shape{(a, b)} returned {seen['value']!r} instead of raising "
                "ValueError: two sizes that differ, neither of them 1, cannot broadcast"
            )
            assert seen["value_error"], (
                f"broadcast_shape{(a, b)} raised {seen['raised']}, expected ValueError for "
                "shapes that cannot broadcast"
            )
            assert names_a_clash(a, b, seen["message"]), (
                f"broadcast_shape{(a, b)} raised ValueError({seen['message']!r}): the message "
                "must name the dimension that clashes and both of its sizes"
            )
        else:
            compatible += 1
            assert "value" in seen, (
                f"broadcast_shape{(a, b)} raised {seen['raised']}({seen['message']!r}) but "
                f"the shapes broadcast to {want}: equal sizes agree, and a 1 (or a missing "
                "leading dim) stretches to the other size"
            )
            got = seen["value"]
            assert got == want and is_int_tuple(got), (
                f"broadcast_shape{(a, b)} returned {got!r}, expected {want}: shapes align from "
                "the right, a size-1 dimension stretches to the other size (even to 0); the "
                "result is a new tuple of ints whatever sequence types a and b are (a "
                "shortcut that hands back one argument as given returns a list for a list)"
            )
    return compatible, clashing


def as_given(shape, kind):
    """``shape`` as the sequence type ``kind`` names (see broadcast_outcomes)."""
    return {"tuple": tuple, "list": list, "size": torch.Size}[kind](shape)


def random_pair(rng):
    """Two shapes that broadcast (mostly) or clash in one dimension (sometimes)."""
    n = rng.randint(0, 5)
    base = [rng.choice([0, 1, 2, 3, 5]) for _ in range(n)]
    a, b = list(base), list(base)
    for i in range(n):
        r = rng.random()
        if r < 0.25:
            a[i] = 1
        elif r < 0.5:
            b[i] = 1
        elif r < 0.58:
            b[i] = base[i] + rng.randint(1, 3)  # a clash unless one side is 1
    a = a[rng.randint(0, n) :] if rng.random() < 0.4 else a
    b = b[rng.randint(0, n) :] if rng.random() < 0.4 else b
    return tuple(a), tuple(b)


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_agrees_with_torch_on_random_pairs():
    """broadcast_shape agrees with torch.broadcast_shapes on random shape pairs, compatible and clashing."""
    # 120 pairs, not 400: every broadcast_shape variant of the bug zoo is caught without this
    # test (the generated sweep below draws the same axes), and each call costs ~4 ms of
    # invariant checks; 120 keeps every rank 0-5, clashes in any dimension, trailing slices
    rng = random.Random(1234)
    pairs = [random_pair(rng) for _ in range(120)]
    compatible, clashing = judge_broadcasts(pairs)
    assert compatible > 90 and clashing > 12, (  # a check on the test's own generator
        f"the random shape pairs covered {compatible} compatible and {clashing} clashing cases"
    )


sizes = st.sampled_from([0, 1, 1, 2, 3, 4, 7])
shapes = st.lists(sizes, max_size=5).map(tuple)
# a and b are any Sequence[int]: what a caller hands over (see broadcast_outcomes)
sequence_kinds = st.sampled_from(["tuple", "list", "size"])


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
@examples(40)
# every run: an empty shape and an equal pair, each side a list (then a torch.Size)
@example(pairs=[((), (2, 3)), ((4, 1), (4, 1)), ((), ())], kinds=[("list", "list")] * 12)
@example(pairs=[((), (0,)), ((3,), (3,))], kinds=[("size", "list"), ("list", "size")] * 6)
@given(
    pairs=st.lists(st.tuples(shapes, shapes), min_size=1, max_size=12),
    kinds=st.lists(st.tuples(sequence_kinds, sequence_kinds), min_size=12, max_size=12),
)
def test_broadcast_shape_agrees_with_torch_on_generated_pairs(pairs, kinds):
    """broadcast_shape agrees with torch.broadcast_shapes on generated pairs, in either order, each shape a tuple, a list or a torch.Size (empty ones included)."""
    pairs = [tuple(p) for p in pairs] + [(b, a) for a, b in pairs]
    judge_broadcasts(pairs, (kinds + kinds)[: len(pairs)])


@pytest.mark.task("ch01.1")
@pytest.mark.parametrize(
    "a, b",
    [
        ((0,), (1,)),
        ((1,), (0,)),
        ((1, 0), (3, 1)),
        ((), ()),
        ((1,), ()),
        ((2, 1, 1), (1, 1, 7, 1)),
        ((0, 1), (1, 0)),
        ((5,), (1, 1, 1)),
        ((1, 512, 3), (1024, 512, 1)),
    ],
    ids=[
        "zero-vs-one",
        "one-vs-zero",
        "zero-in-matrix",
        "two-scalars",
        "one-vs-scalar",
        "rank-mismatch",
        "zeros-crossed",
        "vector-vs-ones",
        "large-sizes",
    ],
)
def test_broadcast_shape_edge_cases(a, b):
    """A size-1 dimension takes the other size, including 0; missing leading dims count as 1.
    Each case is asked three ways (swapped, and under a new leading dimension), so a shape
    guessed from what the process saw earlier does not pass by coincidence."""
    for x, y in ((a, b), (b, a), ((3, *a), b)):
        want = tuple(torch.broadcast_shapes(x, y))
        got = sh.broadcast_shape(x, y)
        assert got == want and is_int_tuple(got), (
            f"broadcast_shape{(x, y)} returned {got!r}, expected {want}: a size-1 dimension "
            "takes the other size, including 0, and missing leading dimensions count as 1"
        )


CLASHES = [((2,), (0,)), ((0,), (3,)), ((3, 2), (2, 3)), ((2, 1), (8, 4, 3)), ((4, 2, 5), (3, 5))]


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_rejects_every_clash():
    """Sizes that differ with neither of them 1 raise ValueError, 0 against 2 or 3 included."""
    for (a, b), outcome in zip(CLASHES, broadcast_outcomes(CLASHES)):
        assert outcome.get("value_error"), (
            f"broadcast_shape{(a, b)} gave {outcome}, expected a ValueError: sizes must be equal "
            "or one of them 1 (a 0 only combines with 0 or 1)"
        )


@probe
def broadcast_of_sequences():
    """broadcast_shape on a torch.Size and a list, and on two torch.Size objects."""
    return (
        sh.broadcast_shape(torch.Size([6, 1]), [1, 9]),
        sh.broadcast_shape(torch.Size([2, 1, 3]), torch.Size([4, 1])),
        sh.broadcast_shape((5, 1, 1), range(1, 4)),
        sh.broadcast_shape(range(1, 2), (3, 1)),
    )


@pytest.mark.task("ch01.1")
def test_broadcast_shape_accepts_torch_size_and_lists():
    """broadcast_shape accepts any sequence of ints (torch.Size, list, tuple, range) and returns a tuple of ints."""
    first, second, third, fourth = broadcast_of_sequences()
    for call, got, want in (
        ("broadcast_shape((5, 1, 1), range(1, 4))", third, (5, 2, 3)),
        ("broadcast_shape(range(1, 2), (3, 1))", fourth, (3, 1)),
    ):
        assert got == want and is_int_tuple(got), (
            f"{call} returned {got!r}, expected {want}: a and b are any Sequence[int] (tuple, "
            "range, list, torch.Size); index them or convert with tuple(...), never test for "
            "one container type"
        )
    assert first == (6, 9) and is_int_tuple(first), (
        f"broadcast_shape(torch.Size([6, 1]), [1, 9]) returned {first!r}, expected (6, 9)"
    )
    assert second == (2, 4, 3) and is_int_tuple(second), (
        f"broadcast_shape(torch.Size([2, 1, 3]), torch.Size([4, 1])) returned {second!r}, "
        "expected (2, 4, 3)"
    )


@probe
def broadcast_of_lists(a, b):
    """broadcast_shape on two lists: its result, and both lists afterwards."""
    a, b = list(a), list(b)
    return sh.broadcast_shape(a, b), a, b


@pytest.mark.task("ch01.1")
def test_broadcast_shape_leaves_its_lists_unchanged():
    """broadcast_shape only reads the shapes it is given: lists passed in keep their entries."""
    got, a, b = broadcast_of_lists([3, 1], [2, 1, 4])
    assert got == (2, 3, 4) and is_int_tuple(got), (
        f"broadcast_shape([3, 1], [2, 1, 4]) returned {got!r}, expected (2, 3, 4)"
    )
    assert a == [3, 1] and b == [2, 1, 4], (
        f"broadcast_shape([3, 1], [2, 1, 4]) left its arguments as {a} and {b}: padding the "
        "shorter shape with 1s must happen in a new tuple (tuple(a) or (1,) * k + tuple(a)), "
        "not by inserting into the caller's list"
    )


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_error_names_the_clashing_sizes():
    """The ValueError names the clashing dimension and both of its sizes."""
    with pytest.raises(ValueError) as info:
        sh.broadcast_shape((7, 11, 2), (13, 1))
    msg = str(info.value)
    assert (
        re.search(r"\b11\b", msg)
        and re.search(r"\b13\b", msg)
        and re.search(r"dim|axis", msg, re.I)
    ), f"the ValueError message {msg!r} should name the dimension that clashes and both sizes"


# ---- ch01.2 pairwise_sq_dists ------------------------------------------------------


@pytest.mark.task("ch01.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("n, m, d", [(6, 6, 6), (9, 9, 2), (1, 8, 3), (8, 1, 8), (4, 4, 1)])
def test_pairwise_sq_dists_other_sizes(n, m, d):
    """pairwise_sq_dists is the (N, M) matrix of squared distances, square sizes included."""
    x = torch.randn(n, d, generator=gen(100 + n))
    y = torch.randn(m, d, generator=gen(200 + m + d)) * 2 + 0.5
    with because(
        f"pairwise_sq_dists(x[{n}, {d}], y[{m}, {d}]) raised: pair every row of x "
        "with every row of y through different broadcast axes"
    ):
        got = sh.pairwise_sq_dists(x, y)
    problem = dists_problem(x, y, got)
    assert problem is None, f"pairwise_sq_dists(x[{n}, {d}], y[{m}, {d}]) {problem}"


@pytest.mark.task("ch01.2")
@examples(25)
@given(
    n=st.integers(1, 7),
    m=st.integers(1, 7),
    d=st.integers(1, 6),
    square=st.booleans(),
    seed=st.integers(0, 10_000),
    scale=st.sampled_from([0.01, 1.0, 30.0]),
)
def test_pairwise_sq_dists_agrees_with_the_reference(n, m, d, square, seed, scale):
    """pairwise_sq_dists matches the reference on generated sizes (N == M often) and scales."""
    if square:
        m = n
    g = gen(seed)
    x = torch.randn(n, d, generator=g) * scale
    y = torch.randn(m, d, generator=g) * scale + scale
    with because(f"pairwise_sq_dists(x[{n}, {d}], y[{m}, {d}]) raised"):
        got = sh.pairwise_sq_dists(x, y)
    want = ref.pairwise_sq_dists(x.double(), y.double())
    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (n, m), (
        f"pairwise_sq_dists(x[{n}, {d}], y[{m}, {d}]) returned {brief(got)}, expected shape "
        f"({n}, {m}): one entry per (row of x, row of y) pair"
    )
    tol = 1e-4 * float(want.abs().max()) + 1e-6 * scale**2
    err = float((got.double() - want).abs().max())
    assert err <= tol, (
        f"pairwise_sq_dists(x[{n}, {d}], y[{m}, {d}]) is off ({first_difference(got, want)}): "
        "out[i, j] must be the sum over features of (x[i] - y[j])**2"
    )


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_of_a_set_with_itself():
    """The distance from each point to itself is 0 and the matrix of a set with itself is symmetric."""
    x = torch.randn(7, 7, generator=gen(31))
    got = sh.pairwise_sq_dists(x, x)
    problem = dists_problem(x, x, got)
    assert problem is None, f"pairwise_sq_dists(x[7, 7], x) {problem}"
    assert float(got.diagonal().abs().max()) < 1e-3, (
        "the distance from each point to itself must be (about) 0"
    )


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_with_an_empty_side():
    """An empty set of points gives an empty (0, M) or (N, 0) matrix, points with no
    features (D = 0) an (N, M) matrix of zeros, and the same code still measures a non-empty set."""
    x, y = torch.randn(0, 3, generator=gen(32)), torch.randn(4, 3, generator=gen(33))
    # an empty answer shows only a shape: the same function must also measure real points
    z = torch.randn(2, 3, generator=gen(36))
    with because("pairwise_sq_dists(x[2, 3], y[4, 3]) raised"):
        got = sh.pairwise_sq_dists(z, y)
    problem = dists_problem(z, y, got)
    assert problem is None, f"pairwise_sq_dists(x[2, 3], y[4, 3]) {problem}"
    for a, b, want in [(x, y, (0, 4)), (y, x, (4, 0))]:
        with because(f"pairwise_sq_dists(x{list(a.shape)}, y{list(b.shape)}) raised"):
            got = sh.pairwise_sq_dists(a, b)
        judge.equal(
            got,
            torch.empty(want),
            f"pairwise_sq_dists(x{list(a.shape)}, y{list(b.shape)}) must be an empty float "
            f"tensor of shape {want}: one entry per (row of x, row of y) pair, so none here",
            dtype="float",
        )
    for n, m in [(3, 2), (0, 2)]:  # D = 0: every distance is a sum over no features
        a, b = torch.randn(n, 0, generator=gen(37)), torch.randn(m, 0, generator=gen(38))
        featureless = (
            f"pairwise_sq_dists(x[{n}, 0], y[{m}, 0]): points with no features (D = 0) are "
            "all at distance 0 from each other, so out is an [N, M] matrix of zeros (a sum "
            "over no features is 0, not a missing value); a Python sum or a stack over the "
            "features has nothing to add or stack here: reduce over the feature axis of an "
            "[N, M, D] tensor instead"
        )
        with because(f"{featureless} (it raised)"):
            got = sh.pairwise_sq_dists(a, b)
        judge.equal(got, torch.zeros(n, m), featureless, dtype="float")


@probe
def dists_keeping(x, y):
    """pairwise_sq_dists(x, y) and what about x or y differs afterwards."""
    before = [snapshot(x), snapshot(y)]
    got = sh.pairwise_sq_dists(x, y)
    return got, changes("x", x, before[0]) + changes("y", y, before[1])


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_leaves_its_inputs_unchanged():
    """pairwise_sq_dists reads x and y without changing their values, shapes or version counters."""
    x = torch.randn(4, 4, generator=gen(34))
    y = torch.randn(4, 4, generator=gen(35))
    got, changed = dists_keeping(x, y)
    problem = dists_problem(x, y, got)
    assert problem is None, f"pairwise_sq_dists(x[4, 4], y[4, 4]) {problem}"
    assert not changed, (
        f"pairwise_sq_dists(x, y) changed {', '.join(changed)}: in-place ops (unsqueeze_, "
        "sub_, pow_) on the inputs rewrite the caller's tensors; index with None "
        "(x[:, None, :]) and compute into new tensors"
    )


@pytest.mark.task("ch01.2")
@examples(20)
@given(
    n=st.integers(1, 5),
    m=st.integers(1, 5),
    d=st.integers(1, 4),
    seed=st.integers(0, 999),
    **DOMAIN,
)
def test_pairwise_sq_dists_in_any_layout_and_dtype(n, m, d, seed, layout, dtype):
    """Transposed, strided and offset windows of bigger tensors give the same distances, and float64 points give them in float64."""
    g = gen(seed)
    x = torch.randn(n, d, generator=g).to(getattr(torch, dtype))
    y = torch.randn(m, d, generator=g).to(getattr(torch, dtype))
    with because(
        f"pairwise_sq_dists raised on {dtype} x[{n}, {d}], y[{m}, {d}] given as {layout} "
        "windows: .view needs contiguous memory; index with None or use reshape"
    ):
        got = in_layout("pairwise_sq_dists", layout, x, y)
    want = ((x.double()[:, None, :] - y.double()[None, :, :]) ** 2).sum(-1)
    judge.close(
        got,
        want,
        f"pairwise_sq_dists of {dtype} x[{n}, {d}] and y[{m}, {d}] given as {layout} windows "
        "must be the same distances as for contiguous copies"
        + (FLOAT64_KEPT if dtype == "float64" else ""),
        **kept_precision(dtype),
    )


# ---- ch01.3 batch_linear -----------------------------------------------------------


@pytest.mark.task("ch01.3")
@examples(20)
@given(n=st.integers(1, 5), seed=st.integers(0, 999), **DOMAIN)
def test_batch_linear_in_any_layout_and_dtype(n, seed, layout, dtype):
    """Transposed, strided and offset windows of bigger tensors give F.linear's answer, and float64 inputs give it in float64."""
    g = gen(seed)
    x, W, b = (
        torch.randn(*shape, generator=g).to(getattr(torch, dtype))
        for shape in ((n, n + 1), (max(1, n - 1), n + 1), (max(1, n - 1),))
    )
    with because(
        f"batch_linear raised on {dtype} inputs given as {layout} windows: .view needs "
        "contiguous memory (x @ W.T + b works on any layout)"
    ):
        got = in_layout("batch_linear", layout, x, W, b)
    judge.close(
        got,
        F.linear(x.double(), W.double(), b.double()),
        f"batch_linear of {dtype} inputs given as {layout} windows must equal F.linear"
        + (FLOAT64_KEPT if dtype == "float64" else ""),
        **kept_precision(dtype),
    )


@pytest.mark.task("ch01.3")
@pytest.mark.points(2)
@pytest.mark.parametrize("bsz, i, o", [(7, 7, 7), (2, 5, 3), (3, 3, 1), (6, 2, 6), (1, 4, 4)])
def test_batch_linear_matches_f_linear(bsz, i, o):
    """batch_linear equals F.linear for square and rectangular sizes."""
    x = torch.randn(bsz, i, generator=gen(bsz * 100 + i))
    W = torch.randn(o, i, generator=gen(o * 10 + 1))
    b = torch.randn(o, generator=gen(o + 2)) * 3
    with because(f"batch_linear(x[{bsz}, {i}], W[{o}, {i}], b[{o}]) raised: W is [out, in]"):
        got = sh.batch_linear(x, W, b)
    want = F.linear(x, W, b)
    judge.close(
        got,
        want,
        f"batch_linear(x[{bsz}, {i}], W[{o}, {i}], b[{o}]) must be F.linear(x, W, b): the "
        "weight holds one row per output feature and the bias is added per output feature",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch01.3")
@examples(20)
# an empty batch (and empty everything), every run: nn.Linear takes a batch of 0 rows
@example(n=0, seed=1, rect=True)
@example(n=0, seed=2, rect=False)
@given(n=st.integers(0, 6), seed=st.integers(0, 10_000), rect=st.booleans())
def test_batch_linear_agrees_with_f_linear_on_generated_sizes(n, seed, rect):
    """batch_linear equals F.linear on generated sizes, mostly B == I == O, a batch of 0 rows included."""
    g = gen(seed)
    bsz, i, o = (n, n, n) if not rect else (n, n + 1, max(1, n - 1))
    x = torch.randn(bsz, i, generator=g)
    W = torch.randn(o, i, generator=g)
    b = torch.randn(o, generator=g)
    with because(
        f"batch_linear(x[{bsz}, {i}], W[{o}, {i}], b[{o}]) raised: W is [out, in], and a batch "
        "of 0 rows is a batch (a loop over rows with torch.stack has nothing to stack)"
    ):
        got = sh.batch_linear(x, W, b)
    want = F.linear(x, W, b)
    judge.close(
        got,
        want,
        f"batch_linear(x[{bsz}, {i}], W[{o}, {i}], b[{o}]) must be F.linear(x, W, b): "
        "out[k, o] = x[k] . W[o] + b[o]",
        atol=1e-5,
        rtol=1e-5,
    )


@probe
def linear_grads(x, W, b, upstream):
    """Gradients of sum(batch_linear(x, W, b) * upstream) with respect to x, W and b."""
    x, W, b = x.requires_grad_(True), W.requires_grad_(True), b.requires_grad_(True)
    (sh.batch_linear(x, W, b) * upstream).sum().backward()
    return x.grad, W.grad, b.grad


@pytest.mark.task("ch01.3")
def test_batch_linear_passes_gradients_to_its_parameters():
    """Gradients flow to x, W and b and equal those of F.linear (W is [out, in])."""
    g = gen(41)
    x, W, b = (
        torch.randn(5, 5, generator=g),
        torch.randn(5, 5, generator=g),
        torch.randn(5, generator=g),
    )
    upstream = torch.randn(5, 5, generator=g)
    gx, gW, gb = linear_grads(x, W, b, upstream)
    for label, got, want in [
        ("x", gx, upstream @ W),
        ("W", gW, upstream.T @ x),
        ("b", gb, upstream.sum(0)),
    ]:
        assert got is not None, (
            f"no gradient reached {label}: batch_linear must be built from differentiable "
            "tensor ops on x, W and b"
        )
        judge.close(
            got,
            want,
            f"the gradient with respect to {label} must be that of F.linear: the weight "
            "convention is W[out, in], the bias is per output feature",
            atol=1e-4,
            rtol=1e-5,
        )


@probe
def linear_keeping(x, W, b):
    """batch_linear(x, W, b) and what about x, W or b differs afterwards."""
    before = [snapshot(t) for t in (x, W, b)]
    got = sh.batch_linear(x, W, b)
    notes = [n for name, t, s in zip("xWb", (x, W, b), before) for n in changes(name, t, s)]
    return got, notes


@pytest.mark.task("ch01.3")
def test_batch_linear_leaves_its_inputs_unchanged():
    """batch_linear leaves x, W and b as they were: same values, shapes and version counters."""
    x, W = torch.randn(3, 3, generator=gen(40)), torch.randn(3, 3, generator=gen(41))
    b = torch.randn(3, generator=gen(42))
    got, changed = linear_keeping(x, W, b)
    want = F.linear(x, W, b)
    judge.close(
        got,
        want,
        "batch_linear(x[3, 3], W[3, 3], b[3]) must equal F.linear (leaving the inputs alone "
        "counts only beside a correct answer)",
        atol=1e-5,
        rtol=1e-5,
    )
    assert not changed, (
        f"batch_linear(x, W, b) changed {', '.join(changed)}: W.T and b[None, :] are new views, "
        "while t_(), unsqueeze_() or add_() rewrite the caller's layer parameters in place"
    )


# ---- pairwise_sq_dists and batch_linear on another device ----------------------------


@probe
def on_meta(dtype):
    """pairwise_sq_dists and batch_linear on tensors of the meta device (a device other than
    the CPU that holds no values, like a GPU you don't have): each result's device, dtype
    and shape, or what was raised."""
    meta, dt = torch.device("meta"), getattr(torch, dtype)

    seen = devices.described_on_meta

    x, y = torch.zeros(4, 3, dtype=dt, device=meta), torch.zeros(5, 3, dtype=dt, device=meta)
    W, b = torch.zeros(2, 3, dtype=dt, device=meta), torch.zeros(2, dtype=dt, device=meta)
    return {
        "pairwise_sq_dists": seen(sh.pairwise_sq_dists, x, y),
        "batch_linear": seen(sh.batch_linear, x, W, b),
    }


def check_on_meta(name, call, want_shape):
    """``name`` on meta tensors of both float dtypes returns there, in their dtype."""
    for dtype in ("float32", "float64"):
        seen = on_meta(dtype)[name]
        if "cannot tell" in seen:
            continue
        got = (
            "raised " + seen["raised"]
            if "raised" in seen
            else (f"gave {seen['dtype']} {list(seen['shape'])} on {seen['device']}")
        )
        assert "raised" not in seen and (seen["device"], seen["dtype"], seen["shape"]) == (
            "meta",
            f"torch.{dtype}",
            want_shape,
        ), (
            f"{call} on {dtype} tensors of the meta device (which stands for a GPU here) {got}, "
            f"expected torch.{dtype} {list(want_shape)} on meta: a result preallocated with "
            "torch.zeros/torch.empty on the default CPU and filled, or any helper tensor made "
            "without device=x.device, fails on a CUDA batch or brings it back to the CPU; "
            "build it from the inputs (x.new_zeros, torch.zeros(..., device=x.device, "
            "dtype=x.dtype)) or let the ops make it"
        )


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_stays_on_the_inputs_device():
    """pairwise_sq_dists of points on another device (meta) returns its [N, M] distances there, in their dtype; on the CPU they are right."""
    x = torch.randn(3, 2, generator=gen(71), dtype=torch.float64)
    y = torch.randn(4, 2, generator=gen(72), dtype=torch.float64)
    with because("pairwise_sq_dists(x[3, 2], y[4, 2]) raised on float64 CPU tensors"):
        got = sh.pairwise_sq_dists(x, y)
    judge.close(
        got,
        ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1),
        "pairwise_sq_dists(x[3, 2], y[4, 2]) in float64 must be the squared distances",
        **kept_precision("float64"),
    )
    check_on_meta("pairwise_sq_dists", "pairwise_sq_dists(x[4, 3], y[5, 3])", (4, 5))


@pytest.mark.task("ch01.3")
def test_batch_linear_stays_on_the_inputs_device():
    """batch_linear of inputs on another device (meta) returns its [B, O] output there, in their dtype; on the CPU it is F.linear's."""
    x, W, b = (
        torch.randn(*s, generator=gen(73), dtype=torch.float64) for s in ((3, 2), (4, 2), (4,))
    )
    with because("batch_linear(x[3, 2], W[4, 2], b[4]) raised on float64 CPU tensors"):
        got = sh.batch_linear(x, W, b)
    judge.close(
        got,
        F.linear(x, W, b),
        "batch_linear(x[3, 2], W[4, 2], b[4]) in float64 must equal F.linear",
        **kept_precision("float64"),
    )
    check_on_meta("batch_linear", "batch_linear(x[4, 3], W[2, 3], b[2])", (4, 2))


# ---- ch01.4 trace_shapes -----------------------------------------------------------


def other_program(a, b):
    s = a @ b.transpose(0, 1)  # (5, 5) <- (5, 2) @ (2, 5): transpose then matmul
    s = torch.softmax(s, dim=-1)  # (5, 5)
    t = s.permute(1, 0) - 1.0  # (5, 5), (5, 5)
    return t.sum(0).reshape(5, 1)  # (5,), (5, 1)


def factories_and_tuples(x):
    z = torch.zeros(2, 3)  # (2, 3)
    values, indices = torch.max(x, dim=1)  # (4,), (4,)
    parts = torch.split(z, [1, 2], dim=1)  # (2, 1), (2, 2)
    counts = torch.histogramdd(x[:, :2], bins=[3, 5])  # (4, 2); (3, 5) and [(4,), (6,)]
    return z, values, indices, parts, counts


def crashes_at_its_third_op(x, y):
    h = x * 2  # (3, 4)
    h = h.t()  # (4, 3)
    return h @ y  # (4, 3) @ (4, 2): illegal


def raises_its_own_error(x):
    h = x + 1  # (2, 2)
    if h.shape[0] == 2:  # a program's own check, not torch's
        raise KeyError("no such column")
    return h


def single_sum(x):
    return x.sum()


def reshapes_in_place(x):
    h = x * 2  # (2, 3)
    h.unsqueeze_(0)  # (1, 2, 3): the same tensor h, a new shape
    h.squeeze_()  # (2, 3)
    h.t_()  # (3, 2)
    h.resize_(6)  # (6,)
    buf = torch.empty(0)  # (0,)
    torch.add(x, 1, out=buf)  # (2, 3): buf is resized to hold the sum
    y = x.clone()  # (2, 3)
    y.unsqueeze_(0).transpose_(0, 2)  # (1, 2, 3), (3, 2, 1)
    return h, buf, y


HIDDEN_PROGRAMS = {
    "other": other_program,
    "factories": factories_and_tuples,
    "crash3": crashes_at_its_third_op,
    "own-error": raises_its_own_error,
    "sum": single_sum,
    "in-place-shapes": reshapes_in_place,
}


def add_into_a_column(x):
    h = x.clone()
    h[:, 0] += 1  # __getitem__, an in-place add on the column, then __setitem__ (no tensor)


class Tagged(torch.Tensor):
    """A tensor subclass with torch's default behaviour: its ops return Tagged tensors."""


def step_a_parameter(x, y):
    p = torch.nn.Parameter(x.clone())
    with torch.no_grad():
        p -= y  # __isub__ runs sub_ and returns p itself: a Parameter
    return p


# Ops that Python reaches through a Tensor's dunder methods: indexing (__getitem__),
# properties (__get__), reflected operators (1 - x is x.__rsub__(1)), in-place operators on
# integer tensors (__iand__ ...), and operators torch names by their dunder (__floordiv__,
# __invert__, __and__, __eq__ ...). Each takes x (a, b) float, y broadcastable to x, and k,
# an int64 tensor whose values index x's first dimension; each clones before writing.
OPERATOR_FORMS = {
    "x[:, None]": lambda x, y, k: x[:, None],
    "x[None, ..., None]": lambda x, y, k: x[None, ..., None],
    "x[0]": lambda x, y, k: x[0],
    "x[-1, 1:]": lambda x, y, k: x[-1, 1:],
    "x[..., ::2]": lambda x, y, k: x[..., ::2],
    "x[x > 0]": lambda x, y, k: x[x > 0],
    "x[k]": lambda x, y, k: x[k],
    "x[[0, 0]]": lambda x, y, k: x[[0, 0]],
    "x[:, None] - y": lambda x, y, k: x[:, None] - y,
    "x.T": lambda x, y, k: x.T,
    "x @ x.mT": lambda x, y, k: x @ x.mT,
    "1 - x": lambda x, y, k: 1 - x,
    "2 ** x": lambda x, y, k: 2**x,
    "1 / x": lambda x, y, k: 1 / x,
    "3 // (x.abs() + 1)": lambda x, y, k: 3 // (x.abs() + 1),
    "7 % x": lambda x, y, k: 7 % x,
    "2.5 * x": lambda x, y, k: 2.5 * x,
    "1 << k": lambda x, y, k: 1 << k,
    "64 >> k": lambda x, y, k: 64 >> k,
    "-x": lambda x, y, k: -x,
    "+x": lambda x, y, k: +x,
    "abs(x)": lambda x, y, k: abs(x),
    "~(x > y)": lambda x, y, k: ~(x > y),
    "x // y": lambda x, y, k: x // y,
    "x % y": lambda x, y, k: x % y,
    "x ** y": lambda x, y, k: x**y,
    "k & 3": lambda x, y, k: k & 3,
    "k | 1": lambda x, y, k: k | 1,
    "k ^ 2": lambda x, y, k: k ^ 2,
    "k << 1": lambda x, y, k: k << 1,
    "k >> 1": lambda x, y, k: k >> 1,
    "x == y": lambda x, y, k: x == y,
    "x >= 0": lambda x, y, k: x >= 0,
    "h = x.clone(); h += y": lambda x, y, k: operator.iadd(x.clone(), y),
    "h = x.clone(); h -= 1": lambda x, y, k: operator.isub(x.clone(), 1),
    "h = x.clone(); h //= y": lambda x, y, k: operator.ifloordiv(x.clone(), y),
    "h = k.clone(); h &= 1": lambda x, y, k: operator.iand(k.clone(), 1),
    "h = k.clone(); h |= 2": lambda x, y, k: operator.ior(k.clone(), 2),
    "h = k.clone(); h ^= 3": lambda x, y, k: operator.ixor(k.clone(), 3),
    "h = k.clone(); h <<= 1": lambda x, y, k: operator.ilshift(k.clone(), 1),
    "h = k.clone(); h >>= 1": lambda x, y, k: operator.irshift(k.clone(), 1),
    "h = x.clone(); h[:, 0] += 1": lambda x, y, k: add_into_a_column(x),
    # Results that are tensors of a subclass: a Parameter updated in place, a Parameter's
    # contiguous() (itself), an op on a subclass (whose results keep the subclass)
    "p = Parameter(x.clone()); p -= y": lambda x, y, k: step_a_parameter(x, y),
    "Parameter(x.clone()).contiguous()": lambda x, y, k: torch.nn.Parameter(x.clone()).contiguous(),
    "x.as_subclass(Tagged) * 2": lambda x, y, k: x.as_subclass(Tagged) * 2,
    "(x.as_subclass(Tagged) - y).sum(0)": lambda x, y, k: (x.as_subclass(Tagged) - y).sum(0),
    # Tensor methods and functions whose result is no tensor: no entry of their own (an
    # ndarray, a Python number, a torch.Size, a list, a dtype, a storage)
    "x.numpy()": lambda x, y, k: x.numpy(),
    "x.T.numpy()": lambda x, y, k: x.T.numpy(),
    "np.asarray(x)": lambda x, y, k: np.asarray(x),
    "x.sum().item()": lambda x, y, k: x.sum().item(),
    "float(x[0, 0])": lambda x, y, k: float(x[0, 0]),
    "bool(x[0, 0] > 0)": lambda x, y, k: bool(x[0, 0] > 0),
    "int(k[0, 0])": lambda x, y, k: int(k[0, 0]),
    "x.tolist()": lambda x, y, k: x.tolist(),
    "len(x) + x.dim() + x.numel()": lambda x, y, k: len(x) + x.dim() + x.numel(),
    "x.size(), x.stride()": lambda x, y, k: (x.size(), x.stride()),
    "x.shape[0]": lambda x, y, k: x.shape[0],
    "x.is_contiguous(), x.dtype": lambda x, y, k: (x.is_contiguous(), x.dtype),
    "x.untyped_storage()": lambda x, y, k: x.untyped_storage(),
}


def run_operator_forms(forms, x, y, k):
    """A program that runs each of ``forms`` (keys of OPERATOR_FORMS) on x, y, k in turn."""
    for form in forms:
        OPERATOR_FORMS[form](x, y, k)


@probe
def traced_operator_programs(cases):
    """trace_shapes of run_operator_forms for each ``(forms, x, y, k)`` of ``cases``."""
    traces = []
    for forms, x, y, k in cases:
        traces.append(
            sh.trace_shapes(lambda *a, forms=forms: run_operator_forms(forms, *a), x, y, k)
        )
    return traces


def operator_cases(seed, count):
    """Seeded programs over OPERATOR_FORMS: each form alone once, then ``count`` random
    sequences of 2-7 forms; x is (a, b) with a, b in 1..4 (square too), y one of the shapes
    that broadcast to x's, k int64 (c, d) with values below a."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    names = list(OPERATOR_FORMS)
    programs = [[name] for name in names]
    programs += [rng.choices(names, k=rng.randint(2, 7)) for _ in range(count)]
    cases = []
    for forms in programs:
        a, b = rng.randint(1, 4), rng.randint(1, 4)
        y_shape = rng.choice([(b,), (1, b), (a, 1), (a, b), ()])
        x = torch.randn(a, b, generator=g)
        y = torch.randn(y_shape, generator=g)
        k = torch.randint(0, a, (rng.randint(1, 3), rng.randint(1, 3)), generator=g)
        cases.append((forms, x, y, k))
    return cases


# In-place edits a traced program may make to a tensor it is given (x: 2-D, float).
EDIT_FORMS = {
    "x.add_(1)": lambda x: x.add_(1),
    "x.mul_(-2)": lambda x: x.mul_(-2),
    "x[0] = 7": lambda x: x.__setitem__(0, 7),
    "x[:, -1] -= 3": lambda x: operator.isub(x[:, -1], 3),
    "x.zero_()": lambda x: x.zero_(),
    "x.copy_(x.flip(0))": lambda x: x.copy_(x.flip(0)),
    "torch.neg(x, out=x)": lambda x: torch.neg(x, out=x),
    "x.clamp_(max=0)": lambda x: x.clamp_(max=0),
}


@probe
def effects_on_the_callers_arguments(cases):
    """For each ``(form, order, layout, x, w, v)`` of ``cases``: trace_shapes of a program
    given x (laid out as ``layout``), a list, w (a leaf needing its gradient, same layout),
    v and an int, in ``order``. From inside the program, after each step, it notes what the
    caller's own objects hold: x after the edit ``form`` of the x it was given, the list
    after appending 2 to the list it was given, w.grad after a backward of (w * v).sum()
    on the w it was given; each change is undone before the program goes on."""
    notes = []
    for form, order, layout, x, w, v in cases:
        x = laid_out(x, layout)
        w = laid_out(w, layout).requires_grad_()
        items, note = [1], {}
        given = {"x": x, "w": w, "v": v, "items": items, "n": 3}

        def program(*args, form=form, order=order, x=x, w=w, items=items, note=note):
            got = dict(zip(order, args))
            saved = x.detach().clone()
            EDIT_FORMS[form](got["x"])
            note["x"] = x.detach().clone()
            with torch.no_grad():
                x.copy_(saved)
            got["items"].append(2)
            note["items"] = list(items)
            del items[1:]
            (got["w"] * got["v"]).sum().backward()
            note["w.grad"] = None if w.grad is None else w.grad.detach().clone()
            w.grad = None

        sh.trace_shapes(program, *(given[name] for name in order))
        notes.append(note)
    return notes


def effect_cases(seed, count):
    """Seeded programs for effects_on_the_callers_arguments: every edit form and layout,
    float32 and float64, x and w of shape (a, b) with a, b in 1..4, the five arguments in a
    random order."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    cases = []
    for i in range(count):
        form = list(EDIT_FORMS)[i % len(EDIT_FORMS)]
        layout = LAYOUTS[i % len(LAYOUTS)]  # channels_last: contiguous for 2-D
        order = rng.sample(["x", "w", "v", "items", "n"], 5)
        dtype = rng.choice([torch.float32, torch.float64])
        a, b = rng.randint(1, 4), rng.randint(1, 4)
        x, w, v = (torch.randn(a, b, generator=g, dtype=dtype) for _ in range(3))
        cases.append((form, tuple(order), layout, x, w, v))
    return cases


def effects_problem(cases, notes):
    """What went wrong with fn's effects on the caller's arguments (None if nothing)."""
    for (form, order, layout, x, _w, v), note in zip(cases, notes):
        call = (
            f"trace_shapes(fn, {', '.join(order)}) with x and w {layout} {tuple(x.shape)} {x.dtype}"
        )
        want = x.clone()
        EDIT_FORMS[form](want)
        if "x" not in note or not judge.is_equal(note["x"], want):
            return (
                f"{call}: fn's in-place edit `{form}` of its argument x did not reach the "
                f"caller's x (it held {brief(note.get('x'))}, expected {brief(want)})"
            )
        if note.get("items") != [1, 2]:
            return (
                f"{call}: fn appended 2 to its list argument, but the caller's list then held "
                f"{note.get('items')!r}, not [1, 2]"
            )
        grad = note.get("w.grad")
        if grad is None or not judge.is_equal(grad, v):
            return (
                f"{call}: a backward of (w * v).sum() inside fn left the caller's leaf w with "
                f"grad {brief(grad)}, expected v ({brief(v)})"
            )
    return None


def product_or_fallback(h):
    try:
        return h @ h  # (a, b) @ (a, b) with a != b: illegal
    except RuntimeError:
        return h @ h.mT @ h  # (a, b) again


def flattened_or_copied(h):
    try:
        flat = h.t().view(-1)  # illegal when h.t() is not contiguous
    except RuntimeError:
        flat = h.t().reshape(-1)
    return flat.view(h.shape[1], h.shape[0]).t()


def row_or_last_row(h):
    try:
        row = h[h.shape[0]]  # one past the last row: IndexError
    except IndexError:
        row = h[-1]
    return h + row


def reshaped_then_summed(h):
    try:
        return h.reshape(5, -1)  # a * b in (6, 8, 12): illegal
    finally:
        h.sum()  # runs, and is traced, before the error leaves the program


def product_then_sum(h):
    out = h @ h  # illegal: the program ends here, h.sum() never runs
    h.sum()
    return out


def product_or_negated(h):
    try:
        return h @ h
    except Exception:  # noqa: BLE001 - any error of the op, whatever its type
        return -h


# Steps of a program on h, an (a, b) float tensor with a != b (both 2..4); each returns the
# new h, (a, b) or (b, a). Some raise (an op fails and nothing catches it), some catch an op's
# error themselves and go on, as real programs do.
CRASH_FORMS = {
    "h * 2": lambda h: h * 2,
    "h.t()": lambda h: h.t(),
    "h.flip(0)": lambda h: h.flip(0),
    "h @ h": lambda h: h @ h,
    "h @ h, then h.sum()": product_then_sum,
    "h[len(h)]": lambda h: h[h.shape[0]],
    "h.reshape(5, -1)": lambda h: h.reshape(5, -1),
    "try h @ h, except RuntimeError h @ h.mT @ h": product_or_fallback,
    "try h.t().view(-1), except RuntimeError h.t().reshape(-1)": flattened_or_copied,
    "try h[len(h)], except IndexError h[-1]": row_or_last_row,
    "try h.reshape(5, -1), finally h.sum()": reshaped_then_summed,
    "try h @ h, except Exception -h": product_or_negated,
}


def run_crash_forms(forms, x):
    """A program that applies each of ``forms`` (keys of CRASH_FORMS) to h = x in turn."""
    h = x
    for form in forms:
        h = CRASH_FORMS[form](h)
    return h


@probe
def traced_crash_programs(cases):
    """trace_shapes of run_crash_forms for each ``(forms, x)`` of ``cases``."""
    return [
        sh.trace_shapes(lambda t, forms=forms: run_crash_forms(forms, t), x) for forms, x in cases
    ]


def crash_cases(seed, count):
    """Seeded programs over CRASH_FORMS: each form that catches an error alone, then
    ``count`` random sequences of 2-5 forms; x is (a, b) with a != b in 2..4, float32 or
    float64."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    names = list(CRASH_FORMS)
    programs = [[name] for name in names if name.startswith("try")]
    programs += [rng.choices(names, k=rng.randint(2, 5)) for _ in range(count)]
    cases = []
    for forms in programs:
        a, b = rng.sample([2, 3, 4], 2)
        dtype = rng.choice([torch.float32, torch.float64])
        cases.append((forms, torch.randn(a, b, generator=g, dtype=dtype)))
    return cases


@probe
def traced_hidden(program, *args):
    """trace_shapes of the module-level program named ``program`` on ``args``."""
    return sh.trace_shapes(HIDDEN_PROGRAMS[program], *args)


@probe
def traced_twice_after_a_crash(x, y):
    """Trace a crashing program, then how many torch function modes are still active,
    then a second, fresh trace."""
    first = sh.trace_shapes(crashes_at_its_third_op, x, y)
    active = torch._C._len_torch_function_stack()
    second = sh.trace_shapes(single_sum, x)
    return first, active, second


@pytest.mark.task("ch01.4")
def test_trace_shapes_on_another_program():
    """trace_shapes runs fn on the caller's own arguments and records every op's output shape, in call order: functions, methods, indexing, properties and operators, reflected and in-place ones included."""
    # fn(*args) itself runs: its in-place edits, list appends and backward passes reach the
    # caller's objects, whatever their layout, dtype and position among the arguments.
    cases = effect_cases(71, 16)
    problem = effects_problem(cases, effects_on_the_callers_arguments(cases))
    assert problem is None, (
        f"{problem}. trace_shapes must run fn(*args) on the very arguments it was given, as "
        "calling fn(*args) would: only the recording is added. A copy of an argument "
        "(clone, detach, deepcopy, .contiguous() of a strided tensor) takes fn's in-place "
        "writes and the gradients of its backward pass away from the caller's objects"
    )
    a, b = torch.randn(5, 2, generator=gen(51)), torch.randn(5, 2, generator=gen(52))
    shapes = shapes_of(traced_hidden("other", a, b))
    want = [(2, 5), (5, 5), (5, 5), (5, 5), (5, 5), (5,), (5, 1)]
    assert shapes == want, (
        f"trace_shapes recorded {shapes}, expected {want}: one entry per torch op the function "
        "performs (functions, methods and operators), in the order they ran"
    )
    # Ops reached through a Tensor's dunder methods are ops too: x[:, None], 1 - x, h &= 1.
    cases = operator_cases(61, 30)
    traces = traced_operator_programs(cases)
    wrong = []
    for (forms, x, y, k), got in zip(cases, traces):
        fn = lambda *t, forms=forms: run_operator_forms(forms, *t)  # noqa: E731
        expected = ref.trace_shapes(fn, x, y, k)
        if shapes_of(got) != shapes_of(expected):
            wrong.append((forms, tuple(x.shape), tuple(y.shape), got, expected))
    if not wrong:
        return
    lone = [case for case in wrong if len(case[0]) == 1] or wrong
    shown = "; ".join(
        f"{' ; '.join(forms)} with x {xs}, y {ys}: recorded {shapes_of(got)}, expected "
        f"{[(name, tuple(s)) for name, s in expected]}"
        for forms, xs, ys, got, expected in lone[:4]
    )
    assert not wrong, (
        f"trace_shapes missed or added entries in {len(wrong)} of {len(cases)} programs of "
        f"indexing and operators ({len(lone)} single ops among them): {shown}. Python runs "
        "indexing, properties such as .T, reflected operators (1 - x calls x.__rsub__) and "
        "in-place operators (h &= 1 calls h.__iand__) through the tensor's dunder methods, and "
        "the mode hands them to __torch_function__ under those names (__getitem__, __rsub__, "
        "__iand__, __get__ ...); each one that returns a tensor is an op and needs its entry, "
        "whatever its name looks like. A call whose result is no tensor (x.numpy()'s ndarray, "
        "x.item()'s or float(x)'s number, x.size()'s torch.Size, x.tolist()'s list) produced "
        "no tensor and has no entry: ask whether each result is a torch.Tensor, not whether "
        "it has a .shape or is a number, and a subclass is a tensor too (an nn.Parameter "
        "updated in place returns itself): isinstance, not type(out) is torch.Tensor"
    )


@pytest.mark.task("ch01.4")
def test_trace_shapes_sees_factories_and_multiple_outputs():
    """Tensors created inside fn and every tensor of a multi-output op, nested ones included,
    are recorded."""
    shapes = shapes_of(traced_hidden("factories", torch.randn(4, 7, generator=gen(53))))
    assert (2, 3) in shapes, f"a tensor created inside fn must be recorded; trace shapes {shapes}"
    assert shapes.count((4,)) >= 2, (
        f"an op returning several tensors (torch.max with dim) must have each output recorded; "
        f"trace shapes {shapes}"
    )
    assert (2, 1) in shapes and (2, 2) in shapes, (
        f"an op returning a tuple of tensors (torch.split) must have each one recorded; trace "
        f"shapes {shapes}"
    )
    assert (3, 5) in shapes and (6,) in shapes, (
        "an op whose result nests tensors (torch.histogramdd returns the counts and a list of "
        "bin edges, one tensor per dimension) must have every tensor recorded, however deep "
        f"its tuples and lists go; trace shapes {shapes}"
    )


@pytest.mark.task("ch01.4")
@pytest.mark.points(2)
def test_trace_shapes_after_a_crash_stops_at_the_last_good_op_and_cleans_up():
    """After a crash the trace holds exactly the ops before it, the mode is off, the next trace starts empty; an op's error reaches fn as it would untraced, so fn's own except/finally runs and is traced."""
    x, y = torch.randn(3, 4, generator=gen(54)), torch.randn(4, 2, generator=gen(55))
    with because(CRASH_ESCAPED):
        first, active, second = traced_twice_after_a_crash(x, y)
    assert shapes_of(first) == [(3, 4), (4, 3)], (
        f"after a crash the trace should hold exactly the ops that completed before it; got "
        f"{shapes_of(first)}"
    )
    assert active == 0, (
        "after trace_shapes returns, torch ops are still being intercepted: the recording "
        "must stop even when fn raises (enter the mode with a `with` block)"
    )
    assert shapes_of(second) == [()], f"a second trace must start empty; got {shapes_of(second)}"
    # An op's error reaches fn as it would untraced: fn's own except/finally runs (and is
    # traced), an error nothing catches ends fn there, and no later op of fn runs.
    cases = crash_cases(73, 6)
    with because(CRASH_ESCAPED):
        traces = traced_crash_programs(cases)
    for (forms, x), got in zip(cases, traces):
        want = ref.trace_shapes(lambda t, forms=forms: run_crash_forms(forms, t), x)
        assert shapes_of(got) == shapes_of(want), (
            f"trace_shapes of a program on x {tuple(x.shape)} that runs {forms} recorded "
            f"{shapes_of(got)}, expected {shapes_of(want)}. When an op fails inside the mode its "
            "exception must travel on into fn exactly as it would without tracing: fn may catch "
            "it and take a fallback (whose ops belong in the trace), run a finally block, or "
            "stop there (no op after it runs). Catching the op's error inside "
            "__torch_function__ and handing fn something else instead changes what fn does, "
            "and so does ending the recording at the first failed op; only trace_shapes "
            "itself, around the whole of fn, swallows what fn lets escape"
        )


@pytest.mark.task("ch01.4")
def test_trace_shapes_swallows_any_exception_fn_raises():
    """Whatever fn raises (not only torch's errors) is swallowed and the trace so far returned."""
    with because(CRASH_ESCAPED):
        trace = traced_hidden("own-error", torch.ones(2, 2))
    assert shapes_of(trace) == [(2, 2)], (
        f"a program that raises its own KeyError after one op should give a trace of that op; "
        f"got {shapes_of(trace)}"
    )


@pytest.mark.task("ch01.4")
def test_trace_shapes_records_each_shape_as_it_was_produced():
    """Each entry holds the output's shape at the moment the op returned: a later in-place reshape of the same tensor (unsqueeze_, t_, resize_, out=) does not rewrite earlier entries."""
    shapes = shapes_of(traced_hidden("in-place-shapes", torch.ones(2, 3)))
    want = [(2, 3), (1, 2, 3), (2, 3), (3, 2), (6,), (0,), (2, 3), (2, 3), (1, 2, 3), (3, 2, 1)]
    assert shapes == want, (
        "trace_shapes of a program that reshapes one tensor in place (h = x * 2; "
        "h.unsqueeze_(0); h.squeeze_(); h.t_(); h.resize_(6); torch.add(x, 1, out=buf), ...) "
        f"recorded {shapes}, expected {want}: each entry is the shape the op produced, read when "
        "the op returned. Keeping the output tensors and reading .shape later shows the shape "
        "they have by then (it also keeps every output alive)"
    )


# ---- ch01.5 first_divergence -------------------------------------------------------


@pytest.mark.task("ch01.5")
@pytest.mark.points(2)
def test_first_divergence_properties():
    """first_divergence is the first differing op, the shorter length, or None."""
    trace = [("a", (2, 3)), ("b", (3, 3)), ("c", (3,)), ("d", (1, 3))]
    cases = [
        ([(5, 3), (3, 3), (3,), (1, 3)], 0, "a mismatch at the very first op"),
        ([(2, 3), (3, 3), (3,), (3, 1)], 3, "a mismatch at the last op only"),
        ([(2, 3), (3, 3), (9,), (9, 9)], 2, "two mismatches: the first one counts"),
        ([[2, 3], [3, 3], [3], [1, 3]], None, "shapes given as lists"),
        ([("x", (2, 3)), ("y", (3, 3)), ("z", (3,)), ("w", (1, 3))], None, "(name, shape) pairs"),
        ([("x", (2, 3)), ("y", (3, 1)), ("z", (3,)), ("w", (1, 3))], 1, "(name, shape) pairs"),
        ([("x", [2, 3]), ("y", [3, 3]), ("z", [3]), ("w", [1, 3])], None, "pairs of lists"),
        ([(2, 3), (3, 3)], 2, "a trace longer than expected"),
        (
            [(2, 3), (9, 9)],
            1,
            "a trace longer than expected that differs before the expected list ends",
        ),
        ([(2, 3), (3, 3), (3,), (1, 3), (5,)], 4, "an expected op that never ran"),
        (
            [(2, 3), (3, 3), (3, 1), (1, 3), (5,)],
            2,
            "a mismatch before a longer expected list ends",
        ),
        ([], 0, "nothing expected"),
    ]
    for expected, want, label in cases:
        got = sh.first_divergence(trace, expected)
        assert got == want and type(got) is type(want), (
            f"first_divergence with {label} returned {got!r}, expected {want!r}: the index of the "
            "first op whose shape differs from the expected one (shape as a sequence of ints), "
            "the shorter length if one list ends early with no difference before that, None if all "
            "agree"
        )


@probe
def divergences_with_torch_size():
    """first_divergence on traces and expectations holding torch.Size shapes."""
    trace = [("view", torch.Size([4, 2])), ("sum", torch.Size([]))]
    return (
        sh.first_divergence(trace, [(4, 2), ()]),
        sh.first_divergence([("view", (4, 2)), ("sum", ())], [torch.Size([4, 2]), torch.Size([])]),
        sh.first_divergence(trace, [torch.Size([4, 2]), torch.Size([1])]),
        sh.first_divergence((("view", [4, 2]), ("sum", [])), ([4, 2], [])),
        sh.first_divergence((("view", [4, 2]), ("sum", [3])), ((4, 2), range(3, 4))),
    )


@pytest.mark.task("ch01.5")
def test_first_divergence_with_torch_size_and_empty_traces():
    """torch.Size, tuple and list shapes with equal sizes agree; empty and long traces are handled."""
    same, same_again, differs, tuples_same, range_same = divergences_with_torch_size()
    assert tuples_same is None and range_same is None, (
        "first_divergence with the trace and the expected shapes given as tuples of lists "
        f"(and a shape as range(3, 4)) gave {tuples_same!r} and {range_same!r}, expected None: "
        "both are any Sequence; compare shapes as tuple(shape) == tuple(expected)"
    )
    assert same is None and same_again is None, (
        f"torch.Size and tuple shapes with the same sizes must compare equal; got {same!r} and "
        f"{same_again!r}, expected None"
    )
    assert differs == 1, f"torch.Size([]) against torch.Size([1]) differ at op 1, got {differs!r}"
    assert sh.first_divergence([], []) is None, "two empty lists agree"
    long = [(f"op{i}", (i % 7 + 1, 3)) for i in range(300)]
    got = sh.first_divergence(long, [s for _, s in long])
    assert got is None, (
        f"a trace of 300 ops that agrees with its 300 expected shapes gave {got!r}, expected "
        "None: compare lengths (and sizes) with ==, not `is`"
    )
    got = sh.first_divergence([], [(1,)])
    assert got == 0, f"an empty trace against one expected op should diverge at 0, got {got!r}"


@probe
def divergence_of_lists(trace, expected):
    """first_divergence on lists of the given entries: its result, and both lists afterwards."""
    trace, expected = list(trace), list(expected)
    return sh.first_divergence(trace, expected), trace, expected


@pytest.mark.task("ch01.5")
def test_first_divergence_leaves_both_lists_unchanged():
    """first_divergence only reads: the trace and the expected shapes keep their length and entries."""
    trace = [("matmul", (5, 2)), ("relu", (5, 2))]
    expected = [(5, 2), (5, 2), (5,)]
    got, trace_after, expected_after = divergence_of_lists(trace, expected)
    assert got == 2, (
        f"first_divergence({trace}, {expected}) returned {got!r}, expected 2: every op agrees "
        "until the trace ends, at index 2"
    )
    unchanged = [tuple(e) for e in trace_after] == trace and [
        tuple(e) for e in expected_after
    ] == expected
    assert unchanged, (
        f"first_divergence changed its arguments: the trace became {trace_after} and the "
        f"expected shapes {expected_after}; compare the lengths instead of padding the "
        "caller's lists (or pad copies)"
    )


op_shapes = st.lists(st.integers(1, 3), max_size=3).map(tuple)


@pytest.mark.task("ch01.5")
@examples(60)
@given(
    shapes_run=st.lists(op_shapes, max_size=6),
    edits=st.lists(st.tuples(st.integers(0, 5), op_shapes), max_size=2),
    cut=st.integers(-2, 2),
    style=st.sampled_from(["tuple", "list", "pair", "list-pair", "mixed"]),
)
def test_first_divergence_agrees_with_the_reference(shapes_run, edits, cut, style):
    """first_divergence agrees with the reference on generated traces and expectations, each expected shape a tuple, list or torch.Size, alone or in a (name, shape) pair written as a tuple or a list."""
    trace = [(f"op{i}", s) for i, s in enumerate(shapes_run)]
    expected = list(shapes_run)
    for at, shape in edits:
        if at < len(expected):
            expected[at] = shape
    if cut < 0:
        expected = expected[: max(0, len(expected) + cut)]
    else:
        expected = expected + [(9,) * k for k in range(1, cut + 1)]
    if style == "list":
        expected = [list(s) for s in expected]
    elif style == "pair":
        expected = [(f"want{i}", s) for i, s in enumerate(expected)]
    elif style == "list-pair":  # as a trace comes back from JSON
        expected = [[f"want{i}", list(s)] for i, s in enumerate(expected)]
    elif style == "mixed":  # every form the docstring names, entry by entry
        forms = [
            tuple,
            list,
            torch.Size,
            lambda s, i: (f"want{i}", torch.Size(s)),
            lambda s, i: [f"want{i}", tuple(s)],
            lambda s, i: [f"want{i}", torch.Size(s)],
        ]
        expected = [
            form(s, i) if form.__name__ == "<lambda>" else form(s)
            for i, (s, form) in enumerate(zip(expected, forms * len(expected)))
        ]
    want = ref.first_divergence(trace, expected)
    got = sh.first_divergence(trace, expected)
    assert got == want and type(got) is type(want), (
        f"first_divergence({trace}, {expected}) returned {got!r}, expected {want!r}: the first "
        "index whose shapes differ; else where the shorter list ends; else None. An expected "
        "entry is a shape (tuple, list or torch.Size) or a (name, shape) pair, and a pair may "
        "come as a list too (a trace saved as JSON loads back as lists): a 2-item entry whose "
        "first item is a str is a pair, whatever its container"
    )


# ---- ch01.6 is_view_of -------------------------------------------------------------


def on_empty(window):
    """(window(e), e) for a fresh empty tensor e = torch.empty(0, 3)."""
    e = torch.empty(0, 3)
    return window(e), e


def meta_pair(pair):
    """pair(m) for a fresh meta tensor m = torch.empty(4, 6, device="meta")."""
    return pair(torch.empty(4, 6, device="meta"))


HIDDEN_PAIRS = {  # case: how to make (a, b) from x = randn(4, 6); e = torch.empty(0, 3); m meta
    "x[1:].t()[::2], x": lambda x: (x[1:].t()[::2], x),
    "x.t().contiguous(), x": lambda x: (x.t().contiguous(), x),
    "x[0], x[3]": lambda x: (x[0], x[3]),
    "torch.empty(0, 3), torch.empty(0, 3)": lambda x: (torch.empty(0, 3), torch.empty(0, 3)),
    "x, x[1:, 3:]": lambda x: (x, x[1:, 3:]),
    "x.t().reshape(24), x": lambda x: (x.t().reshape(24), x),
    "x.view(-1)[:10], x.view(-1)[10:]": lambda x: (x.view(-1)[:10], x.view(-1)[10:]),
    "x[2].view(2, 3), x[2][1:]": lambda x: (x[2].view(2, 3), x[2][1:]),
    "torch.tensor([]), x[2:2]": lambda x: (torch.tensor([]), x[2:2]),
    "x + 0, x": lambda x: (x + 0, x),
    "x[:1].expand(5, 6), x": lambda x: (x[:1].expand(5, 6), x),
    "x[::2].view(torch.int32), x[1::2]": lambda x: (x[::2].view(torch.int32), x[1::2]),
    "x[1:].clone(), x[1:]": lambda x: (x[1:].clone(), x[1:]),
    "x.detach(), x": lambda x: (x.detach(), x),
    "x[2:2], torch.tensor([])": lambda x: (x[2:2], torch.tensor([])),
    "e.view(3, 0), e": lambda x: on_empty(lambda e: e.view(3, 0)),
    "torch.zeros_like(x), torch.zeros_like(x)": lambda x: (
        torch.zeros_like(x),
        torch.zeros_like(x),
    ),
    "x.view(torch.int32), x": lambda x: (x.view(torch.int32), x),
    "x.new_empty(0), x": lambda x: (x.new_empty(0), x),
    "x.contiguous(), x": lambda x: (x.contiguous(), x),
    "x[:, 6:], x[1:1]": lambda x: (x[:, 6:], x[1:1]),
    "x.to(torch.float64), x": lambda x: (x.to(torch.float64), x),
    "x.reshape(3, 8), x": lambda x: (x.reshape(3, 8), x),
    "torch.zeros(0, dtype=torch.int64), torch.zeros(0)": lambda x: (
        torch.zeros(0, dtype=torch.int64),
        torch.zeros(0),
    ),
    "e, e": lambda x: on_empty(lambda e: e),
    "x, x": lambda x: (x, x),
    # meta tensors: storages with a size but no memory, every one at address 0
    "m[1:].t(), m": lambda x: meta_pair(lambda m: (m[1:].t(), m)),
    "m[0], m[3]": lambda x: meta_pair(lambda m: (m[0], m[3])),
    "torch.empty(4, 6, device='meta'), torch.empty(4, 6, device='meta')": lambda x: (
        torch.empty(4, 6, device="meta"),
        torch.empty(4, 6, device="meta"),
    ),
    "m.clone(), m": lambda x: meta_pair(lambda m: (m.clone(), m)),
    "x.to('meta'), x": lambda x: (x.to("meta"), x),
}
# What each case is, on the trusted side only (the probe asks about every case at once).
HIDDEN_CASES = {
    "views": [  # views of views, bases, expanded, detached and dtype views
        "x[1:].t()[::2], x",
        "x, x[1:, 3:]",
        "x[2].view(2, 3), x[2][1:]",
        "x[:1].expand(5, 6), x",
        "x.detach(), x",
        "x.view(torch.int32), x",
        "x.contiguous(), x",
        "x.reshape(3, 8), x",
        "x, x",
    ],
    "copies": [
        "x.t().contiguous(), x",
        "x.t().reshape(24), x",
        "x + 0, x",
        "x[1:].clone(), x[1:]",
        "torch.zeros_like(x), torch.zeros_like(x)",
        "x.to(torch.float64), x",
    ],
    "edge views": [  # disjoint windows of one storage, empty windows onto it, meta windows
        "x[0], x[3]",
        "x.view(-1)[:10], x.view(-1)[10:]",
        "x[::2].view(torch.int32), x[1::2]",
        "e.view(3, 0), e",
        "x[:, 6:], x[1:1]",
        "e, e",
        "m[1:].t(), m",
        "m[0], m[3]",
    ],
    "edge copies": [  # empty and meta tensors on storages of their own
        "torch.empty(0, 3), torch.empty(0, 3)",
        "torch.tensor([]), x[2:2]",
        "x[2:2], torch.tensor([])",
        "x.new_empty(0), x",
        "torch.zeros(0, dtype=torch.int64), torch.zeros(0)",
        "torch.empty(4, 6, device='meta'), torch.empty(4, 6, device='meta')",
        "m.clone(), m",
        "x.to('meta'), x",
    ],
}


@probe
def hidden_view_verdicts():
    """is_view_of(a, b) for every case of HIDDEN_PAIRS, by case."""
    verdicts = {}
    for case, make in HIDDEN_PAIRS.items():
        x = torch.randn(4, 6, generator=torch.Generator().manual_seed(61))
        verdicts[case] = sh.is_view_of(*make(x))
    return verdicts


def hidden_verdicts_on(kind):
    """(case, is_view_of's verdict) for the cases of ``HIDDEN_CASES[kind]``, once it is
    clear that is_view_of tells the cases apart at all."""
    verdicts = hidden_view_verdicts()
    said = {repr(v) for v in verdicts.values()}
    assert len(said) > 1, (
        f"is_view_of answered {said.pop()} for all {len(verdicts)} pairs, views and copies "
        "alike: it must tell a window onto a storage from a tensor with a storage of its own"
    )
    return [(case, verdicts[case]) for case in HIDDEN_CASES[kind]]


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_more_views():
    """Views of views, bases, expanded, detached and dtype views share one storage: True."""
    for label, verdict in hidden_verdicts_on("views"):
        assert verdict is True, (
            f"is_view_of({label}) is {verdict!r}, not True: both read the same storage "
            "(look at the storage, not the offset of the first element, and not only ._base)"
        )


@pytest.mark.task("ch01.6")
def test_is_view_of_more_copies():
    """Copies own separate memory, whatever their values: False."""
    for label, verdict in hidden_verdicts_on("copies"):
        assert verdict is False, (
            f"is_view_of({label}) is {verdict!r}, not False: it owns separate memory, "
            "whatever its values"
        )


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_disjoint_and_empty_windows():
    """Disjoint windows of one storage, empty windows onto it and windows of one meta tensor are views; empty or meta tensors on storages of their own are not."""
    for label, verdict in hidden_verdicts_on("edge views"):
        assert verdict is True, (
            f"is_view_of({label}) is {verdict!r}, not True: both lie in one storage, "
            "whether or not they share an element, even with no element at all and on the "
            "meta device (m is torch.empty(4, 6, device='meta'))"
        )
    for label, verdict in hidden_verdicts_on("edge copies"):
        assert verdict is False, (
            f"is_view_of({label}) is {verdict!r}, not False: each has a storage of its "
            "own; storages without bytes, and every storage on the meta device (sizes, no "
            "memory), all report address 0, so compare the storages themselves where there "
            "is no address to compare"
        )


@probe
def view_check_leaves_alone():
    """is_view_of on pairs that cannot all be written (expanded, integer, with nan and -0.0):
    for each pair, what about a or b differs afterwards, and its verdict (None if it raised)."""
    x = torch.tensor([[float("nan"), -0.0, 1e-8, 3.0, -2.5, 7.0]] * 4)
    n = torch.arange(6)
    pairs = {
        "an expanded row of x, x": lambda: (x[:1].expand(5, 6), x),
        "x viewed as int32, x": lambda: (x.view(torch.int32), x),
        "x[0], x[3]": lambda: (x[0], x[3]),
        "n[::2], n[1::2] (int64)": lambda: (n[::2], n[1::2]),
        "x.clone(), x": lambda: (x.clone(), x),
    }
    changed, verdicts = {}, {}
    for label, make in pairs.items():
        a, b = make()
        before = [snapshot(a), snapshot(b)]
        verdicts[label] = None
        try:
            verdicts[label] = sh.is_view_of(a, b)
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what it raised is the observation
            changed[label] = [f"nothing, but it raised {type(exc).__name__}"]
            continue
        changed[label] = changes("a", a, before[0]) + changes("b", b, before[1])
    return changed, verdicts


LEFT_ALONE_VERDICTS = {
    "an expanded row of x, x": True,
    "x viewed as int32, x": True,
    "x[0], x[3]": True,
    "n[::2], n[1::2] (int64)": True,
    "x.clone(), x": False,
}


@pytest.mark.task("ch01.6")
def test_is_view_of_only_reads_its_arguments():
    """is_view_of answers right without raising and changes neither tensor (bits, version counter, shape), on expanded, integer and nan-holding tensors."""
    changed, verdicts = view_check_leaves_alone()
    for label, notes in changed.items():
        assert not notes, (
            f"is_view_of({label}) changed {', '.join(notes)}: it must only read; writing into "
            "one tensor to watch the other changes the caller's data (and nan, -0.0 or an "
            "expanded tensor cannot be restored or even written); compare storages"
        )
    assert verdicts == LEFT_ALONE_VERDICTS, (
        f"is_view_of gave {verdicts} on expanded, integer and nan-holding pairs; expected "
        f"{LEFT_ALONE_VERDICTS} (side effects count only beside a correct answer)"
    )


# ---- ch01.7 standardize_channels_ (repair) -----------------------------------------


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
@pytest.mark.parametrize("shape", [(3, 3, 5, 5), (6, 2, 1, 4), (2, 5, 2, 2), (5, 4, 2, 1)])
def test_standardize_channels_other_shapes(shape):
    """Per-channel standardization with the biased variance, in place, returning x itself."""
    x = torch.randn(*shape, generator=gen(sum(shape))) * 4 + torch.arange(float(shape[1])).view(
        1, -1, 1, 1
    )
    want = F.batch_norm(x, None, None, training=True, eps=1e-5)
    with because(VIEW_FAILED):
        seen = standardized(x)
    got = seen["returned"]
    judge.close(
        got,
        want,
        f"standardize_channels_ on shape {shape} must be per-channel standardization with the "
        "biased variance over (B, H, W)",
        atol=1e-4,
        rtol=1e-5,
    )
    in_place = (
        f"standardize_channels_ on shape {shape} must change x in place and return x itself: "
        "a reshape/contiguous copy of a transposed x leaves x untouched"
    )
    judge.close(seen["x"], want, in_place, atol=1e-4, rtol=1e-5)
    assert seen["is_x"], in_place


@probe
def standardized_window(big):
    """standardize_channels_ on the strided window big[:, :, :, ::2]: big afterwards."""
    sh.standardize_channels_(big[:, :, :, ::2])
    return big


@pytest.mark.task("ch01.7")
def test_standardize_channels_writes_through_a_window_of_a_bigger_tensor():
    """A strided window of a bigger tensor is standardized in that tensor's memory, nothing else changes."""
    big = torch.randn(4, 3, 4, 6, generator=gen(77)) * 2 + 1
    want = F.batch_norm(big[:, :, :, ::2], None, None, training=True, eps=1e-5)
    with because(VIEW_FAILED):
        after = standardized_window(big)
    window = (
        "standardizing a strided window of a bigger tensor must write the result into that "
        "bigger tensor's memory (in place), not into a private copy, and not by giving the "
        "window new memory (x.data = ..., x.set_)"
    )
    judge.answer(after, big.shape, window)
    judge.close(after[:, :, :, ::2], want, window, atol=1e-4, rtol=1e-5)
    judge.equal(
        after[:, :, :, 1::2],
        big[:, :, :, 1::2],
        "standardizing a window must leave the elements outside the window unchanged",
    )


def standardize_cases(seed=35, count=30):
    """Inputs over standardize_channels_'s whole domain: B, C, H and W of 1 to 4 (a single
    value per channel, square B == C), float32 and float64, eps of 0 to 1 (an int too),
    constant channels, in every layout. (x, eps, layout) each; eps = 0 only where every
    channel has a spread."""
    rng = random.Random(seed)
    g = gen(seed)
    fixed = [((1, 2, 1, 1), 1e-5), ((1, 1, 1, 1), 0.5), ((3, 3, 1, 1), 1), ((2, 2, 2, 2), 0.5)]
    cases = []
    for k in range(count):
        shape, eps = (
            fixed[k]
            if k < len(fixed)
            else (
                tuple(rng.choice([1, 1, 2, 3, 4]) for _ in range(4)),
                rng.choice([1e-5, 1e-5, 1e-3, 0.25, 1, 0.0]),
            )
        )
        dtype = torch.float64 if k % 3 == 1 else torch.float32
        scale = rng.choice([1.0, 5.0, 1e-2])
        offsets = torch.arange(float(shape[1]), dtype=dtype).view(1, -1, 1, 1) * (scale == 1)
        x = torch.randn(*shape, generator=g, dtype=dtype) * scale + offsets
        constant = rng.random() < 0.3 or shape[0] * shape[2] * shape[3] == 1
        if constant:
            x[:, rng.randrange(shape[1])] = 2.5  # exact in any dtype: mean 2.5, variance 0
        if eps == 0.0 and constant:
            eps = 1e-5
        cases.append((x, eps, rng.choice(["contiguous", *LAYOUTS])))
    return cases


@probe
def standardized_cases(cases):
    """standardize_channels_(x, eps=eps) on each (x, eps, layout), x first laid out in
    ``layout``: {"value": (what it returned, x afterwards, whether it returned x)} or what
    it raised (and whether that is a ValueError or RuntimeError with a message)."""
    out = []
    for x, eps, layout in cases:
        x = laid_out(x, layout) if layout != "contiguous" else x.clone()
        try:
            got = sh.standardize_channels_(x, eps=eps)
            out.append({"value": (got, x.clone(), got is x)})
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - what was raised is the observation
            out.append(
                {
                    "raised": f"{type(exc).__name__}: {str(exc)[:200]}",
                    "refusal": isinstance(exc, ValueError | RuntimeError) and bool(str(exc)),
                }
            )
    return out


def batch_norm_refuses(x, eps):
    """F.batch_norm(x, None, None, training=True, eps=eps), the contract's own definition,
    raises on this input (one value per channel; eps = 0 in recent torch): its reason, or
    None."""
    try:
        F.batch_norm(x.clone(), None, None, training=True, eps=eps)
    except (ValueError, RuntimeError) as exc:
        return str(exc)
    return None


def standardize_problem(outcome, want, refused=None):
    """What is wrong with one standardize_channels_ outcome, or None. ``refused``: why
    F.batch_norm itself raises on this input, if it does; there a clear error (a ValueError
    or RuntimeError with a message) is as right as the standardized values."""
    if "raised" in outcome:
        if refused is not None and outcome.get("refusal") is True:
            return None
        if refused is not None:
            return (
                f"it raised {outcome['raised']}; F.batch_norm refuses this input too "
                f"({refused.split(', got')[0][:80]}), so refusing it is allowed, but with a ValueError or "
                "RuntimeError that says why (or return the standardized values, 0 for a channel "
                "without spread), not an error from deeper inside the arithmetic"
            )
        return f"it raised {outcome['raised']}"
    got, after, is_x = outcome["value"]
    tol = dict(atol=1e-9, rtol=1e-9) if want.dtype == torch.float64 else dict(atol=1e-4, rtol=1e-5)
    for name, value in (("what it returned", got), ("x afterwards", after)):
        if not judge.is_close(value, want, dtype=want.dtype, **tol):
            if judge.is_close(value, want, atol=1e-3, rtol=1e-3):  # near: say how near
                gap = (value.double() - want.double()).abs().max().item()
                return f"{name} is {brief(value)}, off by up to {gap:.2g} (allowed {tol})"
            return f"{name} is {brief(value)}: {first_difference(value, want)}"
    if not is_x:
        return "it returned a new tensor, not x itself"
    return None


@pytest.mark.task("ch01.7")
def test_standardize_channels_honours_eps_in_any_layout():
    """eps is added to the variance under the root, for any B, C, H, W (ones included), eps (0, ints), float32 and float64, constant channels and any layout, and x itself changes; where F.batch_norm itself refuses the input, a clear ValueError or RuntimeError is accepted too."""
    cases = standardize_cases()
    outcomes = standardized_cases(cases)
    failed = []
    for (x, eps, layout), outcome in zip(cases, outcomes):
        want = ref.standardize_channels_(x.clone(), eps=eps)  # F.batch_norm refuses B*H*W == 1
        problem = standardize_problem(outcome, want, batch_norm_refuses(x, eps))
        if problem is not None:
            failed.append((x.numel(), x, eps, layout, problem))
    if failed:
        _, x, eps, layout, problem = min(failed, key=lambda f: f[0])
        raise AssertionError(
            f"standardize_channels_(x, eps={eps!r}) with x {tuple(x.shape)} {x.dtype} laid out "
            f"{layout}: {problem} ({len(failed)} of {len(cases)} inputs differ). Each channel "
            "c is standardized over x[:, c] (all of B, H and W, even when they are 1) with the "
            "biased variance: (x - mean) / sqrt(var + eps), eps under the root (a channel of "
            "one value or of equal values becomes 0, or, where F.batch_norm itself refuses the "
            "input, a ValueError saying why); float64 stays float64 and x itself holds the "
            "result"
        )


FAR_FROM_ZERO = [  # (dtype, each channel's offset, its spread, tolerance): BatchNorm's answer
    # holds however far from 0 the data sit; float32's rounding of the inputs at 1e4 leaves
    # correct two-pass statistics ~1e-3 off, float64's at 1e8 ~1e-7
    (torch.float32, (1e4, -1e4, 5e3), (1.0, 3.0, 0.5), 5e-3),
    (torch.float64, (1e8, -3e8, 2e7), (1.0, 3.0, 0.5), 1e-6),
]


@pytest.mark.task("ch01.7")
def test_standardize_channels_far_from_zero_in_float32_and_float64():
    """Data far from 0 (float32 around 1e4, float64 around 1e8) are standardized as F.batch_norm does, in x's own dtype."""
    for k, (dtype, offsets, spreads, tol) in enumerate(FAR_FROM_ZERO):
        g = gen(90 + k)
        x = torch.randn(5, 3, 4, 4, generator=g, dtype=torch.float64)
        x = x * torch.tensor(spreads, dtype=torch.float64).view(1, 3, 1, 1)
        x = (x + torch.tensor(offsets, dtype=torch.float64).view(1, 3, 1, 1)).to(dtype)
        want = F.batch_norm(x, None, None, training=True, eps=1e-5)
        with because(VIEW_FAILED):
            seen = standardized(x)
        where = str(dtype).removeprefix("torch.")
        narrowed = (
            ", and statistics taken in float32 (x.float(), a float32 constant) keep only a few "
            "digits of float64 data far from 0: keep x's dtype throughout"
            if dtype == torch.float64
            else ""
        )
        judge.close(
            seen["x"],
            want,
            f"standardize_channels_ on {where} data whose channels sit around "
            f"{', '.join(f'{o:g}' for o in offsets)} (spread ~{max(spreads):g}) must still equal "
            "F.batch_norm(x, training=True): the variance as E[x^2] - E[x]^2 cancels away every "
            "digit there (take the mean first, then the mean square of x - mean, as "
            f"x.var(unbiased=False) does){narrowed}",
            atol=tol,
            rtol=0.0,
        )


# ---- every task: the caller edits an argument in place between two calls ---------------
# A function computes from the values its arguments hold when it is called. Anything kept
# from an earlier call (a transposed weight, statistics, an answer keyed by id(), by a
# storage address or by the version counter) is stale once the caller changes a tensor
# or a list in place, as an optimizer step changes a layer's weight. The edits below go
# through the ordinary in-place ops and, once per task with tensors, through .data (which
# leaves the version counter alone).


def rows_summed(x):
    return x.sum(1)


def zeros_of(sizes):
    return torch.zeros(sizes).sum(0)


@probe
def linear_through_edits(x, W, b, dx, dW, db):
    """batch_linear(x, W, b) as given, after W.data += dW, after x += dx and after b += db
    (each edit in place on the same tensors): the four results."""
    out = [sh.batch_linear(x, W, b)]
    for t, d in ((W.data, dW), (x, dx), (b, db)):
        t.add_(d)
        out.append(sh.batch_linear(x, W, b))
    return out


@probe
def dists_through_edits(x, y, dx, dy):
    """pairwise_sq_dists(x, y) as given, after x += dx and after y.data += dy (in place)."""
    out = [sh.pairwise_sq_dists(x, y)]
    for t, d in ((x, dx), (y.data, dy)):
        t.add_(d)
        out.append(sh.pairwise_sq_dists(x, y))
    return out


@probe
def standardized_through_edits(x, new):
    """standardize_channels_(x), then x.copy_(new) and standardize_channels_(x) again, then
    x.data.mul_(3) and once more: x after each call."""
    out = [sh.standardize_channels_(x).clone()]
    x.copy_(new)
    out.append(sh.standardize_channels_(x).clone())
    x.data.mul_(3.0).add_(torch.arange(float(x.shape[1])).view(1, -1, 1, 1))
    out.append(sh.standardize_channels_(x).clone())
    return out


@probe
def shapes_through_edits():
    """broadcast_shape, first_divergence and trace_shapes on lists and tensors the caller
    edits in place between calls; is_view_of on a tensor whose storage set_() replaces.
    {function: [each call's result]}."""
    a, b = [3, 1], [1, 4]
    broadcast = [sh.broadcast_shape(a, b)]
    a[0] = 5
    broadcast.append(sh.broadcast_shape(a, b))
    b.insert(0, 2)
    broadcast.append(sh.broadcast_shape(a, b))

    trace = [("matmul", (4, 3)), ("sum", (3,))]
    expected = [(4, 3), (3,)]
    divergence = [sh.first_divergence(trace, expected)]
    expected[1] = (4,)
    divergence.append(sh.first_divergence(trace, expected))
    expected[1] = (3,)
    trace.append(("view", (3, 1)))
    divergence.append(sh.first_divergence(trace, expected))

    sizes, x = [2, 3], torch.ones(3, 2)
    traces = [sh.trace_shapes(zeros_of, sizes)]
    sizes[0] = 4
    sizes.append(5)
    traces.append(sh.trace_shapes(zeros_of, sizes))
    traces.append(sh.trace_shapes(rows_summed, x))
    x.t_()
    traces.append(sh.trace_shapes(rows_summed, x))

    base = torch.arange(12.0).reshape(3, 4)
    a_view = base.clone()
    views = [sh.is_view_of(a_view, base)]
    a_view.set_(base)
    views.append(sh.is_view_of(a_view, base))
    a_view.set_(torch.zeros(3, 4))
    views.append(sh.is_view_of(a_view, base))
    return {
        "broadcast_shape": broadcast,
        "first_divergence": divergence,
        "trace_shapes": [shapes_of(t) for t in traces],
        "is_view_of": views,
    }


# What shapes_through_edits must see, on the tests' side only.
THROUGH_EDITS = {
    "broadcast_shape": (
        [(3, 4), (5, 4), (2, 5, 4)],
        "broadcast_shape([3, 1], [1, 4]), then a[0] = 5, then b.insert(0, 2), on the same lists",
    ),
    "first_divergence": (
        [None, 1, 2],
        "first_divergence(trace, expected), then expected[1] changed, then changed back and "
        "an entry appended to trace, on the same lists",
    ),
    "trace_shapes": (
        [[(2, 3), (3,)], [(4, 3, 5), (3, 5)], [(3,)], [(2,)]],
        "trace_shapes(lambda sizes: torch.zeros(sizes).sum(0), sizes) before and after the "
        "list sizes changed in place, and trace_shapes(lambda x: x.sum(1), x) before and "
        "after x.t_()",
    ),
    "is_view_of": (
        [False, True, False],
        "is_view_of(a, x) with a = x.clone(), then after a.set_(x), then after "
        "a.set_(torch.zeros(3, 4))",
    ),
}
STALE = (
    ": the second call answered from what the first call saw. Compute from the arguments' "
    "values (and storage) as they are at each call; a cache keyed by id(), by the storage "
    "address or by the version counter misses an edit in place"
)


def check_through_edits(name):
    seen = shapes_through_edits()[name]
    want, calls = THROUGH_EDITS[name]
    assert seen == want, f"{calls} gave {seen}, expected {want}{STALE}"


@pytest.mark.task("ch01.1")
def test_broadcast_shape_follows_lists_edited_between_calls():
    """broadcast_shape answers for the sizes its lists hold at each call, after the caller edits them in place."""
    check_through_edits("broadcast_shape")


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_follows_tensors_edited_between_calls():
    """pairwise_sq_dists measures the values x and y hold at each call, after in-place edits."""
    g = gen(120)
    x, y, dx, dy = (torch.randn(4, 3, generator=g) for _ in range(4))
    got = dists_through_edits(x, y, dx, dy)
    states = [(x, y), (x + dx, y), (x + dx, y + dy)]
    for k, (what, (xs, ys)) in enumerate(
        zip(["as given", "after x += dx", "after y += dy"], states)
    ):
        judge.close(
            got[k],
            ((xs.double()[:, None] - ys.double()[None]) ** 2).sum(-1),
            f"pairwise_sq_dists(x, y) {what} (the same tensors, edited in place){STALE}",
            atol=1e-4,
            rtol=1e-4,
            dtype="float",
        )


@pytest.mark.task("ch01.3")
def test_batch_linear_follows_tensors_edited_between_calls():
    """batch_linear uses the values x, W and b hold at each call, after in-place edits of each (an optimizer step changes W in place)."""
    g = gen(121)
    x, dx = torch.randn(3, 4, generator=g), torch.randn(3, 4, generator=g)
    W, dW = torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g)
    b, db = torch.randn(2, generator=g), torch.randn(2, generator=g)
    got = linear_through_edits(x, W, b, dx, dW, db)
    states = [
        ("as given", x, W, b),
        ("after W.data.add_(dW)", x, W + dW, b),
        ("after x.add_(dx)", x + dx, W + dW, b),
        ("after b.add_(db)", x + dx, W + dW, b + db),
    ]
    for k, (what, xs, Ws, bs) in enumerate(states):
        judge.close(
            got[k],
            F.linear(xs, Ws, bs),
            f"batch_linear(x, W, b) {what} (the same tensors, edited in place){STALE}",
            atol=1e-5,
            rtol=1e-5,
        )


@pytest.mark.task("ch01.4")
def test_trace_shapes_follows_arguments_edited_between_calls():
    """trace_shapes runs fn on its arguments as they are at each call: a list or a tensor the caller changed in place gives the new shapes."""
    check_through_edits("trace_shapes")


@pytest.mark.task("ch01.5")
def test_first_divergence_follows_lists_edited_between_calls():
    """first_divergence compares the lists as they are at each call, after the caller edits them in place."""
    check_through_edits("first_divergence")


@pytest.mark.task("ch01.6")
def test_is_view_of_follows_a_storage_replaced_between_calls():
    """is_view_of asks the storages at each call: after a.set_(x) the same tensor a is a view of x, after a.set_(other) it is not."""
    check_through_edits("is_view_of")


@pytest.mark.task("ch01.7")
def test_standardize_channels_follows_new_values_between_calls():
    """standardize_channels_ takes the statistics of the values x holds at each call, after x is refilled in place."""
    g = gen(122)
    x = torch.randn(3, 2, 3, 4, generator=g) * 2 + 1
    new = torch.randn(3, 2, 3, 4, generator=g) * 5 - 3
    got = standardized_through_edits(x, new)
    once = F.batch_norm(new, None, None, training=True, eps=1e-5)
    third = once * 3.0 + torch.arange(2.0).view(1, -1, 1, 1)
    states = [
        ("as given", x),
        ("after x.copy_(new values)", new),
        ("after x.data.mul_(3).add_(per-channel offsets)", third),
    ]
    for k, (what, values) in enumerate(states):
        judge.close(
            got[k],
            F.batch_norm(values, None, None, training=True, eps=1e-5),
            f"standardize_channels_(x) {what} (the same tensor x, edited in place){STALE}",
            atol=1e-4,
            rtol=1e-5,
        )


# ---- ch01.7: in place in every layout and window -----------------------------------------

WINDOWS = {  # name: how the tensor handed to standardize_channels_ lies in its base's memory
    "contiguous": lambda base: base[:3, :3, :4, :5],
    "strided along B": lambda base: base[::2, :3, :4, :5],
    "strided along C": lambda base: base[:3, ::2, :4, :5],
    "strided along H (W > 1)": lambda base: base[:3, :3, ::2, :5],
    "strided along W": lambda base: base[:3, :3, :4, ::2],
    "strided along H and W": lambda base: base[:3, :3, ::2, 1::3],
    "offset in every dim": lambda base: base[1:4, 1:4, 2:6, 3:7],
    "H and W transposed in memory": lambda base: base[:3, :3, :5, :5].transpose(2, 3),
    "B and C swapped in memory": lambda base: base[:3, :4, :4, :5].transpose(0, 1),
    # base's memory read as (B, H, W, C): channels-last windows
    "channels-last": lambda base: base.permute(0, 3, 1, 2)[:3, :3, :4, :5],
    "channels-last, strided along H": lambda base: base.permute(0, 3, 1, 2)[:3, :3, ::2, :5],
}
WINDOW_LAYOUTS = ["transposed", "strided", "offset", "channels_last"]


@probe
def standardized_windows(base):
    """standardize_channels_ on each window of WINDOWS (a view into its own copy of base)
    and on each harness layout of base's first window: {name: (the base afterwards, whether
    it returned the window itself, whether the window kept its memory)}."""
    seen = {}
    for name, window in WINDOWS.items():
        own = base.clone()
        x = window(own)
        memory = (x.untyped_storage().data_ptr(), x.storage_offset(), x.stride())
        got = sh.standardize_channels_(x)
        kept = (x.untyped_storage().data_ptr(), x.storage_offset(), x.stride()) == memory
        seen[name] = (own, got is x, kept)
    for layout in WINDOW_LAYOUTS:
        x = laid_out(base[:3, :3, :4, :5], layout)
        got = sh.standardize_channels_(x)
        seen[f"laid out {layout}"] = (x.clone(), got is x, True)
    return seen


@pytest.mark.task("ch01.7")
def test_standardize_channels_in_place_in_every_layout_and_window():
    """x is standardized in its own memory whatever its strides: strided along any dim, offset, transposed, channels-last (a reshape or flatten that silently copies loses the writes)."""
    base = torch.randn(5, 5, 8, 10, generator=gen(123)) * 3 + torch.arange(5.0).view(1, 5, 1, 1)
    with because(VIEW_FAILED):
        seen = standardized_windows(base)
    for name, window in WINDOWS.items():
        want = base.clone()
        x = window(want)
        x.copy_(F.batch_norm(x.clone(), None, None, training=True, eps=1e-5))
        after, is_x, kept = seen[name]
        judge.close(
            after,
            want,
            f"standardize_channels_(x) with x a window of a bigger tensor, {name}: the window "
            "must hold its standardized values and nothing outside it may change. A reshape, "
            "flatten or view(B, C, -1) of x is a view only for some strides and silently a "
            "copy for others (H and W merge only when stride(H) == W * stride(W)), so writes "
            "into it may never reach x: compute the statistics with keepdim and write into "
            "x itself (x.sub_(mean).div_(std), or x.copy_(...))",
            atol=1e-4,
            rtol=1e-5,
        )
        assert is_x and kept, (
            f"standardize_channels_(x) with x {name}: it must return x itself and keep x's "
            "memory (no x.data = ..., no x.set_)"
        )
    want = F.batch_norm(base[:3, :3, :4, :5], None, None, training=True, eps=1e-5)
    for layout in WINDOW_LAYOUTS:
        after, is_x, _ = seen[f"laid out {layout}"]
        judge.close(
            after,
            want,
            f"standardize_channels_(x) with x laid out {layout} (harness.layouts): x itself "
            "must end standardized per channel",
            atol=1e-4,
            rtol=1e-5,
        )
        assert is_x, f"standardize_channels_(x) with x laid out {layout} must return x itself"
