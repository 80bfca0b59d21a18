"""Public tests for ch01 — run with `pytest exercises/ch01` (add `--impl solutions` to
see the reference pass). Sizes are chosen square on purpose: a wrong axis still runs."""

import re

import pytest
import torch
import torch.nn.functional as F

from harness.target import chapter_module

sh = chapter_module("ch01", "shapes")


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- ch01.1 broadcast_shape -------------------------------------------------------


@pytest.mark.task("ch01.1")
@pytest.mark.parametrize(
    "a, b",
    [((8, 1, 6, 1), (7, 1, 5)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2, 3)), ((4, 4), (4, 1))],
)
def test_broadcast_shape_examples(a, b):
    want = tuple(torch.broadcast_shapes(a, b))
    got = sh.broadcast_shape(a, b)
    assert isinstance(got, tuple) and tuple(got) == want, (
        f"broadcast_shape({a}, {b}) returned {got!r}, torch.broadcast_shapes gives {want}: "
        "line the shapes up from the right (missing leading dims count as 1); a size-1 dim stretches"
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


# ---- ch01.2 pairwise_sq_dists ------------------------------------------------------


def loop_sq_dists(x, y):
    """The slow obvious reference: one pair at a time."""
    out = torch.empty(x.shape[0], y.shape[0], dtype=torch.float64)
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = ((x[i].double() - y[j].double()) ** 2).sum()
    return out


def check_dists(x, y, got):
    n, m = x.shape[0], y.shape[0]
    assert tuple(got.shape) == (n, m), (
        f"pairwise_sq_dists(x[{n}, {x.shape[1]}], y[{m}, {y.shape[1]}]) returned shape "
        f"{tuple(got.shape)}, expected ({n}, {m}): x - y pairs row i with row i only; to pair "
        "every row with every row, give x and y different broadcast axes (x[:, None] - y[None])"
    )
    want = loop_sq_dists(x, y)
    # matmul-form answers (|x|^2 + |y|^2 - 2 x.y) lose a little to cancellation: allow it
    scale = float(want.abs().max())
    err = float((got.double() - want).abs().max())
    assert err <= 1e-4 * scale + 1e-5, (
        f"pairwise_sq_dists differs from the pair-by-pair sum of squared differences by up to "
        f"{err:.3g} (largest distance {scale:.3g}): check which axis you sum over, that you "
        "square before summing, and the sign of the cross term"
    )


@pytest.mark.task("ch01.2")
@pytest.mark.points(2)
def test_pairwise_sq_dists_with_n_equal_m_equal_d():
    x = torch.randn(5, 5, generator=gen(1))
    y = torch.randn(5, 5, generator=gen(2))
    check_dists(x, y, sh.pairwise_sq_dists(x, y))


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_rectangular():
    x = torch.randn(3, 2, generator=gen(3))
    y = torch.randn(7, 2, generator=gen(4))
    check_dists(x, y, sh.pairwise_sq_dists(x, y))


# ---- ch01.3 batch_linear -----------------------------------------------------------


@pytest.mark.task("ch01.3")
@pytest.mark.points(2)
def test_batch_linear_square_sizes_match_f_linear():
    x = torch.randn(4, 4, generator=gen(5))
    W = torch.randn(4, 4, generator=gen(6))
    b = torch.randn(4, generator=gen(7))
    got = sh.batch_linear(x, W, b)
    want = F.linear(x, W, b)
    assert tuple(got.shape) == (4, 4), (
        f"batch_linear(x[4, 4], W[4, 4], b[4]) returned shape {tuple(got.shape)}, expected (4, 4)"
    )
    assert torch.allclose(got, want, atol=1e-5), (
        "batch_linear(x[4, 4], W[4, 4], b[4]) differs from F.linear: the weight is stored "
        "[out, in] (one row per output), so the product is x @ W.T; check also that b is added "
        "per output column, not per example row"
    )


@pytest.mark.task("ch01.3")
def test_batch_linear_uses_an_nn_linear_layer_s_parameters():
    layer = torch.nn.Linear(3, 2)
    x = torch.randn(5, 3, generator=gen(8))
    with torch.no_grad():
        got = sh.batch_linear(x, layer.weight, layer.bias)
        want = layer(x)
    assert tuple(got.shape) == (5, 2) and torch.allclose(got, want, atol=1e-5), (
        f"batch_linear(x[5, 3], layer.weight[2, 3], layer.bias[2]) gave shape {tuple(got.shape)}; "
        "it must equal layer(x) of shape (5, 2): out[k, o] = x[k] . W[o] + b[o]"
    )


# ---- ch01.4 trace_shapes -----------------------------------------------------------


def small_program(a, w):
    h = a @ w  # (4, 3)
    h = h.transpose(0, 1)  # (3, 4)
    h = (h * 2).exp()  # (3, 4), (3, 4)
    return h.sum(-1).unsqueeze(0)  # (3,), (1, 3)


@pytest.mark.task("ch01.4")
@pytest.mark.points(2)
def test_trace_shapes_records_every_op_in_order():
    a, w = torch.randn(4, 5), torch.randn(5, 3)
    trace = sh.trace_shapes(small_program, a, w)
    shapes = [tuple(s) for _, s in trace]
    want = [(4, 3), (3, 4), (3, 4), (3, 4), (3,), (1, 3)]
    assert shapes == want, (
        f"trace_shapes(small_program) recorded shapes {shapes}, expected {want} (matmul, "
        "transpose, mul, exp, sum, unsqueeze): record the output of every torch call while fn "
        "runs — operators and Tensor methods too — not only its inputs or its final result"
    )
    assert all(isinstance(name, str) and name for name, _ in trace), (
        f"every trace entry should be (op_name: str, shape); got {trace}"
    )


def the_books_program(x, y, layer):
    pred = layer(x)  # (B, 1)
    return ((pred - y) ** 2).mean()  # y is (B,): pred - y silently becomes (B, B)


@pytest.mark.task("ch01.4")
def test_trace_shapes_finds_the_silent_broadcast():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 1)
    x, y = torch.randn(6, 3), torch.randn(6)
    trace = sh.trace_shapes(the_books_program, x, y, layer)
    square = [i for i, (_, s) in enumerate(trace) if tuple(s) == (6, 6)]
    assert square, (
        f"trace_shapes of the book's program recorded {trace}: no op produced (6, 6), yet pred "
        "(6, 1) minus y (6,) broadcasts to (6, 6); every op fn performs must be recorded"
    )
    name = trace[square[0]][0]
    assert "sub" in name.lower(), (
        f"the first (6, 6) tensor in the trace comes from op {name!r}; it should be the "
        "subtraction pred - y, where the broadcast happens"
    )


def trace_of_a_crash(fn, *args):
    try:
        return sh.trace_shapes(fn, *args)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the point is that nothing escapes
        pytest.fail(
            f"trace_shapes let fn's crash escape ({type(exc).__name__}: {str(exc)[:100]}); catch "
            "it and return the ops that completed before the crash: they are the evidence"
        )


@pytest.mark.task("ch01.4")
def test_trace_shapes_survives_a_crashing_program():
    def crashes(x):
        h = x.sum(0)  # (4,)
        return h.view(3, 2)  # 4 elements cannot be viewed as 3 x 2

    trace = trace_of_a_crash(crashes, torch.randn(5, 4))
    shapes = [tuple(s) for _, s in trace]
    assert shapes == [(4,)], (
        f"trace_shapes on a function that fails at its second op returned {shapes}, expected "
        "[(4,)]: catch the exception and return what was recorded before it — the trace is "
        "the evidence"
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
def test_first_divergence_when_the_program_stopped_early():
    trace = [("sum", (4,))]
    got = sh.first_divergence(trace, [(4,), (3, 2), (2, 3)])
    assert got == 1, (
        f"first_divergence returned {got!r} for a trace of 1 op against 3 expected ops; expected "
        "1 — the first op that never produced its shape (zip stops at the shorter list, so "
        "compare the lengths too)"
    )


# ---- ch01.6 is_view_of -------------------------------------------------------------


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_views():
    x = torch.arange(12.0).reshape(3, 4)
    for label, a in [
        ("x.t()", x.t()),
        ("x[1:]", x[1:]),
        ("x[:, 2]", x[:, 2]),
        ("x.view(4, 3)", x.view(4, 3)),
        ("x.unsqueeze(0)", x.unsqueeze(0)),
    ]:
        assert sh.is_view_of(a, x) is True, (
            f"is_view_of({label}, x) is not True, but {label} is a view: it reads x's memory "
            "through its own offset and strides (compare storages, not the first element's address)"
        )


@pytest.mark.task("ch01.6")
def test_is_view_of_copies():
    x = torch.arange(12.0).reshape(3, 4)
    for label, a in [
        ("x.clone()", x.clone()),
        ("x.t().contiguous()", x.t().contiguous()),
        ("torch.arange(12.0).reshape(3, 4)", torch.arange(12.0).reshape(3, 4)),
    ]:
        assert sh.is_view_of(a, x) is False, (
            f"is_view_of({label}, x) is not False, but {label} is a copy with its own memory "
            "(equal values do not make a view)"
        )


# ---- ch01.7 standardize_channels_ (repair) -----------------------------------------


def run_repair(x):
    try:
        return sh.standardize_channels_(x)
    except RuntimeError as exc:
        pytest.fail(
            f"standardize_channels_ raised RuntimeError: {str(exc)[:160]} — x.transpose(0, 1) "
            "only swaps strides, so its memory is no longer in row-major order and .view cannot "
            "regroup it; see course/ch01.md#repairing-the-view"
        )


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
def test_standardize_channels_matches_batch_norm():
    x = torch.randn(4, 4, 3, 3, generator=gen(9)) * 3 + torch.arange(4.0).view(1, 4, 1, 1)
    want = F.batch_norm(x.clone(), None, None, training=True, eps=1e-5)
    got = run_repair(x)
    ok = got is not None and got.shape == want.shape and torch.allclose(got, want, atol=1e-4)
    assert ok, (
        "standardize_channels_(x[4, 4, 3, 3]) does not equal F.batch_norm(x, training=True): each "
        "channel c must be standardized over x[:, c] (all examples and pixels); viewing x as "
        "(C, -1) without the transpose groups by example instead, which runs when B == C"
    )


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
def test_standardize_channels_works_in_place():
    x = torch.randn(4, 4, 3, 3, generator=gen(10)) + 5.0
    want = F.batch_norm(x.clone(), None, None, training=True, eps=1e-5)
    run_repair(x)
    assert torch.allclose(x, want, atol=1e-4), (
        "after standardize_channels_(x), x itself is not standardized: reshape (or .contiguous()) "
        "of a transposed tensor makes a copy, so in-place writes into it never reach x; compute "
        "the statistics, then write into x itself (broadcasting with keepdim, or x.copy_)"
    )
