"""Hidden tests for ch01: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import random
import re

import pytest
import torch
import torch.nn.functional as F

from exercises.ch01.test_shapes import (  # helpers shared with the public twin
    loop_sq_dists,
    trace_of_a_crash,
)
from harness.target import chapter_module

sh = chapter_module("ch01", "shapes")


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- ch01.1 broadcast_shape -------------------------------------------------------


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
@pytest.mark.points(3)
def test_broadcast_shape_agrees_with_torch_on_random_pairs():
    rng = random.Random(1234)
    compatible = clashing = 0
    for _ in range(400):
        a, b = random_pair(rng)
        try:
            want = tuple(torch.broadcast_shapes(a, b))
        except RuntimeError:
            want = None
        if want is None:
            clashing += 1
            try:
                got = sh.broadcast_shape(a, b)
            except ValueError:
                continue
            except Exception as exc:  # noqa: BLE001 - report what was raised instead
                pytest.fail(
                    f"broadcast_shape{(a, b)} raised {type(exc).__name__}, expected ValueError "
                    "for shapes that cannot broadcast"
                )
            pytest.fail(
                f"broadcast_shape{(a, b)} returned {got!r} instead of raising ValueError: two "
                "sizes that differ, neither of them 1, cannot broadcast"
            )
        else:
            compatible += 1
            got = sh.broadcast_shape(a, b)
            assert isinstance(got, tuple) and tuple(got) == want, (
                f"broadcast_shape{(a, b)} returned {got!r}, expected {want}: shapes align from "
                "the right, a size-1 dimension stretches to the other size (even to 0)"
            )
    assert compatible > 100 and clashing > 30, (  # a check on the test's own generator
        f"the random shape pairs covered {compatible} compatible and {clashing} clashing cases"
    )


@pytest.mark.task("ch01.1")
@pytest.mark.parametrize(
    "a, b",
    [((0,), (1,)), ((1, 0), (3, 1)), ((), ()), ((1,), ()), ((2, 1, 1), (1, 1, 7, 1))],
    ids=["zero-vs-one", "zero-in-matrix", "two-scalars", "one-vs-scalar", "rank-mismatch"],
)
def test_broadcast_shape_edge_cases(a, b):
    want = tuple(torch.broadcast_shapes(a, b))
    got = sh.broadcast_shape(a, b)
    assert isinstance(got, tuple) and tuple(got) == want, (
        f"broadcast_shape{(a, b)} returned {got!r}, expected {want}: a size-1 dimension takes "
        "the other size, including 0, and missing leading dimensions count as 1"
    )


@pytest.mark.task("ch01.1")
def test_broadcast_shape_accepts_torch_size_and_lists():
    got = sh.broadcast_shape(torch.Size([6, 1]), [1, 9])
    assert tuple(got) == (6, 9) and isinstance(got, tuple), (
        f"broadcast_shape must accept any sequence of ints (torch.Size, list); got {got!r}"
    )


@pytest.mark.task("ch01.1")
@pytest.mark.points(2)
def test_broadcast_shape_error_names_the_clashing_sizes():
    with pytest.raises(ValueError) as info:
        sh.broadcast_shape((7, 11, 2), (13, 1))
    msg = str(info.value)
    assert (
        re.search(r"\b11\b", msg)
        and re.search(r"\b13\b", msg)
        and re.search(r"dim|axis", msg, re.I)
    ), f"the ValueError message {msg!r} should name the dimension that clashes and both sizes"


# ---- ch01.2 pairwise_sq_dists ------------------------------------------------------


def assert_dists(x, y, got, label):
    n, m = x.shape[0], y.shape[0]
    assert tuple(got.shape) == (n, m), (
        f"pairwise_sq_dists on {label} returned shape {tuple(got.shape)}, expected ({n}, {m}): "
        "one entry per (row of x, row of y) pair"
    )
    want = loop_sq_dists(x, y)
    scale = float(want.abs().max())
    err = float((got.double() - want).abs().max())
    assert err <= 1e-4 * scale + 1e-5, (
        f"pairwise_sq_dists on {label} is off by up to {err:.3g} (largest distance {scale:.3g}): "
        "out[i, j] must be the sum over features of (x[i] - y[j])**2"
    )


@pytest.mark.task("ch01.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("n, m, d", [(6, 6, 6), (9, 9, 2), (1, 8, 3), (8, 1, 8)])
def test_pairwise_sq_dists_other_sizes(n, m, d):
    x = torch.randn(n, d, generator=gen(100 + n))
    y = torch.randn(m, d, generator=gen(200 + m + d)) * 2 + 0.5
    assert_dists(x, y, sh.pairwise_sq_dists(x, y), f"x[{n}, {d}], y[{m}, {d}]")


@pytest.mark.task("ch01.2")
def test_pairwise_sq_dists_of_a_set_with_itself():
    x = torch.randn(7, 7, generator=gen(31))
    got = sh.pairwise_sq_dists(x, x)
    assert_dists(x, x, got, "x[7, 7] against itself")
    assert float(got.diagonal().abs().max()) < 1e-3, (
        "the distance from each point to itself must be (about) 0"
    )


# ---- ch01.3 batch_linear -----------------------------------------------------------


@pytest.mark.task("ch01.3")
@pytest.mark.points(2)
@pytest.mark.parametrize("bsz, i, o", [(7, 7, 7), (2, 5, 3), (3, 3, 1), (6, 2, 6)])
def test_batch_linear_matches_f_linear(bsz, i, o):
    x = torch.randn(bsz, i, generator=gen(bsz * 100 + i))
    W = torch.randn(o, i, generator=gen(o * 10 + 1))
    b = torch.randn(o, generator=gen(o + 2)) * 3
    got = sh.batch_linear(x, W, b)
    want = F.linear(x, W, b)
    assert tuple(got.shape) == (bsz, o) and torch.allclose(got, want, atol=1e-5), (
        f"batch_linear(x[{bsz}, {i}], W[{o}, {i}], b[{o}]) is not F.linear(x, W, b): the weight "
        "holds one row per output feature and the bias is added per output feature"
    )


@pytest.mark.task("ch01.3")
def test_batch_linear_passes_gradients_to_its_parameters():
    x = torch.randn(5, 5, generator=gen(41))
    W = torch.randn(5, 5, generator=gen(42), requires_grad=True)
    b = torch.zeros(5, requires_grad=True)
    sh.batch_linear(x, W, b)[:, 0].sum().backward()
    assert W.grad is not None and b.grad is not None, (
        "batch_linear must be built from differentiable tensor ops on W and b"
    )
    want = torch.zeros(5, 5)
    want[0] = x.sum(0)  # only output 0 was used: only row 0 of W matters
    assert torch.allclose(W.grad, want, atol=1e-5), (
        "the gradient of output feature 0 should reach only row 0 of W: the weight convention "
        "is W[out, in]"
    )


# ---- ch01.4 trace_shapes -----------------------------------------------------------


def other_program(a, b):
    s = a @ b.transpose(0, 1)  # (5, 5) <- (5, 2) @ (2, 5): transpose then matmul
    s = torch.softmax(s, dim=-1)  # (5, 5)
    t = s.permute(1, 0) - 1.0  # (5, 5), (5, 5)
    return t.sum(0).reshape(5, 1)  # (5,), (5, 1)


@pytest.mark.task("ch01.4")
@pytest.mark.points(2)
def test_trace_shapes_on_another_program():
    a, b = torch.randn(5, 2), torch.randn(5, 2)
    shapes = [tuple(s) for _, s in sh.trace_shapes(other_program, a, b)]
    want = [(2, 5), (5, 5), (5, 5), (5, 5), (5, 5), (5,), (5, 1)]
    assert shapes == want, (
        f"trace_shapes recorded {shapes}, expected {want}: one entry per torch op the function "
        "performs (functions, methods and operators), in the order they ran"
    )


@pytest.mark.task("ch01.4")
def test_trace_shapes_sees_factories_and_multiple_outputs():
    def program(x):
        z = torch.zeros(2, 3)
        values, indices = torch.max(x, dim=1)
        return z, values, indices

    shapes = [tuple(s) for _, s in sh.trace_shapes(program, torch.randn(4, 7))]
    assert (2, 3) in shapes, f"a tensor created inside fn must be recorded; trace shapes {shapes}"
    assert shapes.count((4,)) >= 1, (
        f"an op returning several tensors must have its outputs recorded; trace shapes {shapes}"
    )


@pytest.mark.task("ch01.4")
@pytest.mark.points(2)
def test_trace_shapes_after_a_crash_stops_at_the_last_good_op_and_cleans_up():
    def crashes(x, y):
        h = x * 2  # (3, 4)
        h = h.t()  # (4, 3)
        return h @ y  # (4, 3) @ (4, 2): illegal

    x, y = torch.randn(3, 4), torch.randn(4, 2)
    shapes = [tuple(s) for _, s in trace_of_a_crash(crashes, x, y)]
    assert shapes == [(3, 4), (4, 3)], (
        f"after a crash the trace should hold exactly the ops that completed before it; got {shapes}"
    )
    if hasattr(torch._C, "_len_torch_function_stack"):
        assert torch._C._len_torch_function_stack() == 0, (
            "after trace_shapes returns, torch ops are still being intercepted: the recording "
            "must stop even when fn raises (enter the mode with a `with` block)"
        )
    again = [tuple(s) for _, s in sh.trace_shapes(lambda t: t.sum(), x)]
    assert again == [()], f"a second trace must start empty; got {again}"


# ---- ch01.5 first_divergence -------------------------------------------------------


@pytest.mark.task("ch01.5")
@pytest.mark.points(2)
def test_first_divergence_properties():
    trace = [("a", (2, 3)), ("b", (3, 3)), ("c", (3,)), ("d", (1, 3))]
    cases = [
        ([(5, 3), (3, 3), (3,), (1, 3)], 0, "a mismatch at the very first op"),
        ([(2, 3), (3, 3), (3,), (3, 1)], 3, "a mismatch at the last op only"),
        ([(2, 3), (3, 3), (9,), (9, 9)], 2, "two mismatches: the first one counts"),
        ([[2, 3], [3, 3], [3], [1, 3]], None, "shapes given as lists"),
        ([("x", (2, 3)), ("y", (3, 3)), ("z", (3,)), ("w", (1, 3))], None, "(name, shape) pairs"),
        ([("x", (2, 3)), ("y", (3, 1)), ("z", (3,)), ("w", (1, 3))], 1, "(name, shape) pairs"),
        ([(2, 3), (3, 3)], 2, "a trace longer than expected"),
        (
            [(2, 3), (9, 9)],
            1,
            "a trace longer than expected that differs before the expected list ends",
        ),
        ([(2, 3), (3, 3), (3,), (1, 3), (5,)], 4, "an expected op that never ran"),
    ]
    for expected, want, label in cases:
        got = sh.first_divergence(trace, expected)
        assert got == want, (
            f"first_divergence with {label} returned {got!r}, expected {want!r}: the index of the "
            "first op whose shape differs from the expected one (shape as a sequence of ints), "
            "the shorter length if one list ends early with no difference before that, None if all "
            "agree"
        )


@pytest.mark.task("ch01.5")
def test_first_divergence_with_torch_size_and_empty_traces():
    trace = [("view", torch.Size([4, 2])), ("sum", torch.Size([]))]
    assert sh.first_divergence(trace, [(4, 2), ()]) is None, (
        "torch.Size and tuple shapes with the same sizes must compare equal"
    )
    assert sh.first_divergence([], []) is None, "two empty lists agree"
    got = sh.first_divergence([], [(1,)])
    assert got == 0, f"an empty trace against one expected op should diverge at 0, got {got!r}"


# ---- ch01.6 is_view_of -------------------------------------------------------------


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_more_views():
    x = torch.randn(4, 6)
    row = x[2]
    cases = [
        ("a view of a view", x[1:].t()[::2], x),
        ("the base of a view", x, x[1:, 3:]),
        ("two views of one base", row.view(2, 3), row[1:]),
        ("an expanded view", x[:1].expand(5, 6), x),
        ("a detached tensor", x.detach(), x),
        ("a dtype view", x.view(torch.int32), x),
        (".contiguous() of a contiguous tensor", x.contiguous(), x),
        ("reshape that can be a view", x.reshape(3, 8), x),
    ]
    for label, a, b in cases:
        assert sh.is_view_of(a, b) is True, (
            f"is_view_of is not True for {label}: both read the same storage (look at the "
            "storage, not the offset of the first element, and not only ._base)"
        )


@pytest.mark.task("ch01.6")
@pytest.mark.points(2)
def test_is_view_of_more_copies():
    x = torch.randn(4, 6)
    cases = [
        ("a transposed tensor made contiguous", x.t().contiguous(), x),
        ("reshape after transpose (must copy)", x.t().reshape(24), x),
        ("x + 0", x + 0, x),
        ("a clone of a view", x[1:].clone(), x[1:]),
        ("torch.zeros_like", torch.zeros_like(x), torch.zeros_like(x)),
    ]
    for label, a, b in cases:
        assert sh.is_view_of(a, b) is False, (
            f"is_view_of is not False for {label}: it owns separate memory, whatever its values"
        )


# ---- ch01.7 standardize_channels_ (repair) -----------------------------------------


def call_repair(x, **kwargs):
    try:
        return sh.standardize_channels_(x, **kwargs)
    except RuntimeError as exc:
        pytest.fail(
            f"standardize_channels_ raised RuntimeError ({str(exc)[:120]}): a transposed tensor "
            "is not contiguous, so .view cannot regroup it"
        )


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
@pytest.mark.parametrize("shape", [(3, 3, 5, 5), (6, 2, 1, 4), (2, 5, 2, 2), (5, 4, 2, 1)])
def test_standardize_channels_other_shapes(shape):
    x = torch.randn(*shape, generator=gen(sum(shape))) * 4 + torch.arange(float(shape[1])).view(
        1, -1, 1, 1
    )
    want = F.batch_norm(x.clone(), None, None, training=True, eps=1e-5)
    got = call_repair(x)
    assert got is not None and torch.allclose(got, want, atol=1e-4), (
        f"standardize_channels_ on shape {shape} is not per-channel standardization with the "
        "biased variance over (B, H, W)"
    )
    assert torch.allclose(x, want, atol=1e-4) and sh_shares(got, x), (
        f"standardize_channels_ on shape {shape} must change x in place and return x itself: "
        "a reshape/contiguous copy of a transposed x leaves x untouched"
    )


def sh_shares(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


@pytest.mark.task("ch01.7")
@pytest.mark.points(2)
def test_standardize_channels_writes_through_a_window_of_a_bigger_tensor():
    big = torch.randn(4, 3, 4, 6, generator=gen(77)) * 2 + 1
    before = big.clone()
    window = big[:, :, :, ::2]  # (4, 3, 4, 3), not contiguous
    want = F.batch_norm(window.clone(), None, None, training=True, eps=1e-5)
    call_repair(window)
    assert torch.allclose(big[:, :, :, ::2], want, atol=1e-4), (
        "standardizing a strided window of a bigger tensor must write the result into that "
        "bigger tensor's memory (in place), not into a private copy"
    )
    assert torch.equal(big[:, :, :, 1::2], before[:, :, :, 1::2]), (
        "standardizing a window must leave the elements outside the window unchanged"
    )


@pytest.mark.task("ch01.7")
def test_standardize_channels_honours_eps_in_any_layout():
    base = torch.randn(3, 3, 4, 4, generator=gen(78))
    for label, x in [
        ("a contiguous x", base.clone()),
        ("a channels_last x", base.clone().contiguous(memory_format=torch.channels_last)),
    ]:
        want = F.batch_norm(x.clone(), None, None, training=True, eps=0.5)
        got = call_repair(x, eps=0.5)
        assert got is not None and torch.allclose(got, want, atol=1e-4), (
            f"standardize_channels_(x, eps=0.5) on {label}: eps must be added to the variance "
            "under the square root"
        )
        assert torch.allclose(x, want, atol=1e-4), (
            f"standardize_channels_ on {label} must change x itself, whatever its memory layout"
        )
