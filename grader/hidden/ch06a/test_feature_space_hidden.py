"""Hidden tests for ch06a: other sizes, seeds and edge cases than the public ones, so a
solution that only fits the public cases fails. Messages state the property, not the test."""

import math
import random

import numpy as np
import pytest
import torch

from exercises.ch06a.test_feature_space import (  # helpers and probes shared with the public twin
    contrasts,
    lengths_mask,
    loop_masked_mean,
    loop_scores,
    make_head,
    masked_mean_backward,
    padded_with,
    same_values,
    scores_checked,
    scores_with_head,
)
from harness import judge
from harness.layouts import LAYOUTS, laid_out
from harness.probe import because, last_line, probe
from harness.target import chapter_module, reference_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
    from harness.plugin import is_stub_todo
except ImportError:  # (probes never use them)
    pass

fs = chapter_module("ch06a", "feature_space")
ref = reference_module("ch06a", "feature_space")
PROBES_USE = "make_head DIMS_FORMS"  # what the probes use besides themselves (harness/strip.py)
FMAX = torch.finfo(torch.float32).max
INF, NAN = float("inf"), float("nan")


@probe
def masked_mean_in_layout(layout, x, mask, dim):
    """masked_mean(x, mask, dim) with x rebuilt, same values, in ``layout`` (harness.layouts)."""
    return fs.masked_mean(laid_out(x, layout), mask, dim)


@pytest.mark.task("ch06a.1")
@examples(20)
@given(
    layout=st.sampled_from(LAYOUTS),
    dtype=st.sampled_from(["float32", "float64"]),
    b=st.integers(1, 4),
    t=st.integers(1, 5),
    e=st.integers(1, 4),
    seed=st.integers(0, 999),
)
def test_masked_mean_in_any_layout_and_dtype(layout, dtype, b, t, e, seed):
    """x given as a transposed, strided or offset window of a bigger tensor, in float32 or float64, gives the same masked mean."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, e, generator=g).to(getattr(torch, dtype))
    mask = torch.rand(b, t, generator=g) < 0.6
    with because(
        f"masked_mean raised on a {dtype} x[{b}, {t}, {e}] given as a {layout} window: .view "
        "needs contiguous memory (reshape, unsqueeze and where work on any layout)"
    ):
        got = masked_mean_in_layout(layout, x, mask, 1)
    keep = mask.double().unsqueeze(-1)
    want = (x.double() * keep).sum(1) / keep.sum(1).clamp(min=1)
    judge.close(
        got,
        want,
        f"masked_mean of a {dtype} x[{b}, {t}, {e}] given as a {layout} window must be the "
        "mean of its valid positions, as for a contiguous copy",
        atol=1e-5,
        rtol=1e-4,
        dtype="float",
    )


def gen(seed):
    return torch.Generator().manual_seed(seed)


# ---- ch06a.1 masked_mean -----------------------------------------------------------


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("fill", [1e30, -1e30, FMAX, -FMAX, 12345.0, INF, -INF, NAN], ids=str)
def test_masked_mean_is_blind_to_any_padding(fill):
    """Whatever padded slots hold (huge, inf, -inf, nan), the result is the mean of the valid ones."""
    x = torch.randn(5, 5, 5, generator=gen(11))
    mask = lengths_mask([5, 3, 1, 4, 2], 5)
    want = loop_masked_mean(x, mask)
    got = fs.masked_mean(padded_with(x, mask, fill), mask, dim=1)
    judge.close(
        got,
        want,
        f"with every padded slot set to {fill:g}, masked_mean no longer equals the mean of the "
        "valid positions: padded values must never enter the sum (x * mask turns inf and nan "
        "into nan; select with torch.where instead)",
        atol=1e-5,
        rtol=1e-5,
    )


def check_masked_mean_at_the_edges():
    """masked_mean where B, T or E is 1, with padded and empty rows, batch-first and time-first."""
    for b, t, rows in EDGE_MASKS_MM:
        for e in (1, 2):
            x = torch.randn(b, t, e, generator=gen(b * 7 + t + e)) + 3.0
            mask = torch.tensor(rows)
            want = loop_masked_mean(x, mask)
            for what, args in (
                (f"masked_mean(x[{b}, {t}, {e}], mask={rows}, dim=1)", (x, mask, 1)),
                (
                    f"masked_mean(x[{t}, {b}, {e}], mask={mask.T.tolist()}, dim=0) (time first)",
                    (x.transpose(0, 1).contiguous(), mask.T.contiguous(), 0),
                ),
            ):
                with because(f"{what} raised"):
                    got = fs.masked_mean(padded_with(args[0], args[1], 1e4), args[1], args[2])
                assert isinstance(got, torch.Tensor) and tuple(got.shape) == (b, e), (
                    f"{what} returned {brief(got)}, expected shape ({b}, {e}): the result drops "
                    "only dim, never another size-1 axis"
                )
                assert judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
                    f"{what} returned {got.tolist()}, expected {want.tolist()} (padding holds "
                    "1e4): each row averages its own valid positions along dim, 0 when it has none"
                )


EDGE_MASKS_MM = [
    (1, 1, [[True]]),
    (1, 1, [[False]]),
    (2, 1, [[True], [False]]),
    (1, 2, [[False, True]]),
    (3, 1, [[False], [True], [True]]),
]


@pytest.mark.task("ch06a.1")
def test_masked_mean_other_layouts():
    """Any dim, time-first layouts, integer and float 0/1 masks, extra trailing axes, and B, T or E of 1 with empty rows."""
    check_masked_mean_at_the_edges()
    x = torch.randn(6, 3, generator=gen(12))  # (B, T) without a feature axis
    mask = torch.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 0]])
    got = fs.masked_mean(x, mask, dim=-1)
    want = loop_masked_mean(x[..., None], mask.bool())[:, 0]
    assert tuple(got.shape) == (6,) and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        "masked_mean over the last dimension of x[B, T] with a 0/1 integer mask must give the "
        "per-row mean of the valid entries"
    )
    xt = torch.randn(4, 3, 2, generator=gen(13))  # (T, B, E): time first
    mt = lengths_mask([4, 2, 3], 4).T  # (T, B)
    got = fs.masked_mean(xt, mt.float(), dim=0)
    want = loop_masked_mean(xt.transpose(0, 1), mt.T)
    assert tuple(got.shape) == (3, 2) and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        "masked_mean(x[T, B, E], mask[T, B] of 0.0/1.0, dim=0) must average over the time axis, "
        "per example"
    )
    x4 = torch.randn(3, 4, 2, 5, generator=gen(14))  # (B, T, H, D): two trailing axes
    m4 = lengths_mask([1, 4, 2], 4)
    got = fs.masked_mean(x4, m4, dim=-3)
    want = loop_masked_mean(x4, m4)
    assert tuple(got.shape) == (3, 2, 5) and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        "masked_mean(x[B, T, H, D], mask[B, T], dim=-3) must give the mask one trailing axis per "
        "extra dimension of x and average over T"
    )


# float16 and bfloat16 (a few of their roundings) and float64 (float64 arithmetic)
OTHER_FLOATS = {"float16": 5e-3, "bfloat16": 4e-2, "float64": 1e-12}


@pytest.mark.task("ch06a.1")
def test_masked_mean_keeps_half_bfloat16_and_double_inputs_dtype():
    """masked_mean of a float16, bfloat16 or float64 x (bool, integer or float mask) is in
    x's dtype, as torch.mean is, and equals the mean of the valid values."""
    x64 = torch.randn(3, 5, 2, generator=gen(40)) * 3
    keep = lengths_mask([2, 5, 1], 5)
    for dtype, tol in OTHER_FLOATS.items():
        x = x64.to(getattr(torch, dtype))
        want = loop_masked_mean(x.double(), keep)
        for mask in (keep, keep.long(), keep.to(x.dtype)):
            what = f"masked_mean({dtype} x[3, 5, 2], {str(mask.dtype)[6:]} mask[3, 5], dim=1)"
            with because(f"{what} raised"):
                got = fs.masked_mean(x, mask, 1)
            assert isinstance(got, torch.Tensor) and got.dtype == x.dtype, (
                f"{what} returned {brief(got)}: a mean keeps x's floating dtype, as x.mean(dim) "
                "does, for float16 and bfloat16 too; divide by the count converted to x.dtype "
                "(a count made with .float() or .double() promotes the result)"
            )
            assert judge.is_close(got.double(), want, atol=tol, rtol=tol), (
                f"{what} is not the mean of the valid values "
                f"({first_difference(got.double(), want, atol=tol, rtol=tol)})"
            )


@pytest.mark.task("ch06a.2")
def test_sequence_scores_keep_half_bfloat16_and_double_inputs_dtype():
    """sequence_scores without a head of a float16, bfloat16 or float64 x is in x's dtype and
    averages the valid positions' feature means."""
    x64 = torch.randn(4, 3, 5, generator=gen(41)) * 3
    mask = lengths_mask([3, 1, 2, 3], 3)
    for dtype, tol in OTHER_FLOATS.items():
        x = x64.to(getattr(torch, dtype))
        what = f"sequence_scores({dtype} x[4, 3, 5], mask[4, 3])"
        with because(f"{what} raised"):
            got = fs.sequence_scores(x, mask)
        want = loop_scores(x.double(), mask, lambda v: v.mean())
        assert isinstance(got, torch.Tensor) and got.dtype == x.dtype, (
            f"{what} returned {brief(got)}: the scores keep x's floating dtype, as a mean does "
            "(a count or mask converted with .float() promotes them)"
        )
        assert judge.is_close(got.double(), want, atol=tol, rtol=tol), (
            f"{what} is not the mean over valid positions of their feature means "
            f"({first_difference(got.double(), want, atol=tol, rtol=tol)})"
        )


@probe
def masked_mean_leaves_inputs(x, mask, dim):
    """masked_mean's result, and x and mask as they are after the call."""
    x, mask = x.clone(), mask.clone()
    out = fs.masked_mean(x, mask, dim)
    return out, x, mask


@pytest.mark.task("ch06a.1")
def test_masked_mean_leaves_its_inputs_alone():
    """masked_mean changes neither x nor mask (no in-place zeroing of the padding)."""
    x = torch.randn(3, 4, 2, generator=gen(15))
    mask = lengths_mask([2, 4, 1], 4)
    out, x_after, mask_after = masked_mean_leaves_inputs(padded_with(x, mask, 7.0), mask, 1)
    # leaving the inputs alone earns its point only beside a real result
    judge.answer(out, (3, 2), "masked_mean(x[3, 4, 2], mask[3, 4], 1)")
    assert judge.is_equal(x_after, padded_with(x, mask, 7.0)) and judge.is_equal(
        mask_after, mask
    ), (
        "masked_mean modified the tensor it was given (padding zeroed in place, e.g. masked_fill_ "
        "or x[~mask] = 0): the caller's x must be left as it was — build a new tensor with "
        "torch.where or masked_fill (no underscore)"
    )


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("fill", [0.5, INF, NAN], ids=str)
def test_masked_mean_empty_rows_and_gradients(fill):
    """A row with no valid position gives 0; the gradient is 0 on padding and 1/count elsewhere."""
    x = torch.randn(3, 4, 2, generator=gen(14))
    mask = lengths_mask([0, 2, 4], 4)
    upstream = torch.randn(3, 2, generator=gen(16))
    with because("masked_mean could not be backpropagated on a batch with an empty row"):
        got, grad = masked_mean_backward(padded_with(x, mask, fill), mask, 1, upstream)
    judge.all_finite(got, "masked_mean must stay finite, even for a row with no valid position")
    judge.equal(
        got[0],
        torch.zeros(2),
        f"a row with no valid position (its slots holding {fill}) must give 0, not nan (0 / 0) "
        f"or the padding; got {brief(got[0])}",
    )
    want = loop_masked_mean(x, mask)
    judge.close(
        got,
        want,
        f"the other rows must still be the mean of their valid positions: {first_difference(got, want)}",
        atol=1e-5,
        rtol=1e-5,
    )
    counts = mask.sum(1).clamp(min=1).to(x.dtype)
    want_grad = mask[..., None] * (upstream / counts[:, None])[:, None, :]
    assert grad is not None and judge.is_equal(grad[~mask], torch.zeros_like(grad[~mask])), (
        f"the gradient reaching padded positions (holding {fill}) must be exactly 0: padding must "
        "not influence the result"
    )
    judge.close(
        grad,
        want_grad,
        f"valid positions must receive upstream / count: {first_difference(grad, want_grad)}",
        atol=1e-6,
        rtol=1e-5,
    )


# every dtype a 0/1 mask comes in (a bf16 or fp16 model's padding mask is often its own dtype)
MASK_KINDS = {
    "bool": torch.bool,
    "int": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "float": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


@st.composite
def masked_inputs(draw):
    """x of 1-4 dims, a mask over its first k dims (bool, int or float), a dim < k
    (sometimes negative), and padded slots filled with finite, huge or non-finite values."""
    ndim = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(ndim)]
    k = draw(st.integers(1, ndim))
    dim = draw(st.integers(0, k - 1))
    if draw(st.booleans()):
        dim -= ndim
    seed = draw(st.integers(0, 10_000))
    g = gen(seed)
    x = torch.randn(*shape, generator=g)
    keep = torch.rand(*shape[:k], generator=g) < draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    fill = draw(st.sampled_from([None, 1e30, -FMAX, INF, -INF, NAN]))
    if fill is not None:
        x = padded_with(x, keep, fill)
    kind = draw(st.sampled_from(list(MASK_KINDS)))
    return x, keep.to(MASK_KINDS[kind]), dim


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)  # one of its three points went to the long-rows test
@examples(55)  # 63 calls with the eight explicit examples, as before the five empty ones
# A 1-D x whose mask covers its one axis (one sequence, no trailing axes): a 0-d mean, every run.
@example(case=(torch.tensor([0.5, -1.0, 2.0, NAN]), torch.tensor([True, False, True, False]), 0))
@example(case=(torch.tensor([3.0, INF]), torch.tensor([1, 0]), -1))
@example(case=(torch.tensor([7.0]), torch.tensor([0.0]), 0))
# Axes of size 0: rows of no positions (no valid position: 0 per feature), no rows, no features.
@example(case=(torch.ones(2, 0, 3), torch.ones(2, 0, dtype=torch.bool), 1))
@example(case=(torch.ones(0, 2, 5), torch.ones(0, 2, dtype=torch.int64), 0))
@example(case=(torch.ones(3, 0, 2, 4), torch.ones(3, 0, dtype=torch.float32), -3))
@example(case=(torch.ones(0, 4, 3), torch.ones(0, 4, dtype=torch.bool), 1))
@example(case=(torch.ones(2, 3, 0), torch.tensor([[1, 0, 1], [0, 0, 0]]), 1))
@given(case=masked_inputs())
def test_masked_mean_equals_the_reference(case):
    """masked_mean equals the reference on random layouts, dims, mask dtypes and paddings, a 1-D x and axes of size 0 included."""
    x, mask, dim = case
    want = ref.masked_mean(x, mask, dim)
    call = (
        f"masked_mean(x of shape {list(x.shape)}, mask of shape {list(mask.shape)} "
        f"({mask.dtype}), dim={dim})"
    )
    if x.dim() == 1:
        call += (
            " on a 1-D x, one sequence with no trailing axes, whose mean over its only axis is "
            "a 0-d tensor"
        )
    if x.numel() == 0:
        call += (
            " with an axis of size 0: rows of no positions have no valid position and give 0 "
            "for each feature (shape as for any row), a batch of no rows gives no rows; a sum "
            "or stack built position by position has nothing to start from there"
        )
    with because(
        f"{call} raised: give the mask trailing 1-axes up to x's rank (none when the mask has "
        "all of x's axes) and reduce over dim (negative dims count from x's end)"
    ):
        got = fs.masked_mean(x, mask, dim)
    assert tuple(got.shape) == tuple(want.shape) and judge.is_close(
        got, want, atol=1e-5, rtol=1e-5
    ), (
        f"{call} is not the mean of the valid entries (0 where there are none, padding "
        f"ignored): {first_difference(got, want)}"
    )


# (valid positions, row length, mask dtype): counts past what the mask's own dtype holds
# exactly (bfloat16: 256, float16: 2048, int8: 127, uint8: 255)
LONG_ROWS = (
    (257, 300, torch.bfloat16),
    (2049, 2050, torch.float16),
    (300, 300, torch.int8),
    (259, 260, torch.uint8),
)


@pytest.mark.task("ch06a.1")
def test_masked_mean_counts_long_rows_exactly_in_any_mask_dtype():
    """Rows with more valid positions than a bfloat16, float16 or 8-bit mask counts exactly."""
    for valid, t, dtype in LONG_ROWS:
        keep = torch.arange(t) < valid
        x = torch.cat([torch.ones(1, t), torch.arange(t, dtype=torch.float32)[None] % 3])
        x = torch.where(keep, x, torch.full((), NAN))  # padding beyond the valid positions
        mask = keep.to(dtype).expand(2, t)
        want = torch.stack([x[r][keep].double().mean() for r in range(2)]).float()
        call = (
            f"masked_mean(x[2, {t}], a {dtype} 0/1 mask with {valid} valid positions a row, dim=1)"
        )
        with because(f"{call} raised"):
            got = fs.masked_mean(x, mask, 1)
        assert tuple(got.shape) == (2,) and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
            f"{call} gave {brief(got)}, expected {brief(want)}: the number of valid positions "
            f"({valid}) must be counted from the mask turned into bool — a sum of the mask in "
            f"its own dtype ({dtype}) rounds or wraps past {valid - 1}"
        )


@st.composite
def non_finite_valid_inputs(draw):
    """masked_inputs with inf, -inf or nan written into some VALID entries too."""
    x, mask, dim = draw(masked_inputs())
    g = gen(draw(st.integers(0, 10_000)))
    keep = mask.bool().reshape(*mask.shape, *([1] * (x.dim() - mask.dim()))).expand_as(x)
    hit = keep & (torch.rand(x.shape, generator=g) < draw(st.sampled_from([0.1, 0.3])))
    values = torch.tensor([INF, -INF, NAN])[torch.randint(3, x.shape, generator=g)]
    return torch.where(hit, values, x), mask, dim


@pytest.mark.task("ch06a.1")
@pytest.mark.points(2)
@examples(30)
@given(case=non_finite_valid_inputs())
def test_masked_mean_keeps_non_finite_valid_values_in_any_layout(case):
    """inf, -inf and nan at valid positions reach the mean as they are, in any layout; padding never does."""
    x, mask, dim = case
    want = ref.masked_mean(x, mask, dim)
    call = (
        f"masked_mean(x of shape {list(x.shape)}, mask of shape {list(mask.shape)} "
        f"({mask.dtype}), dim={dim})"
    )
    with because(
        f"{call} raised"
        + (
            ": a 1-D x whose mask covers its one axis is one sequence, and its mean a 0-d tensor"
            if x.dim() == 1
            else ""
        )
    ):
        got = fs.masked_mean(x, mask, dim)
    assert same_values(got, want), (
        f"{call} with inf, "
        "-inf or nan at some valid positions: a valid value counts as it is (inf stays inf, "
        "inf + -inf and nan give nan) while padding never counts — select with the mask alone, "
        f"never clean x with nan_to_num, nansum/nanmean or an isfinite test "
        f"({first_difference(got, want)})"
    )


@pytest.mark.task("ch06a.1")
def test_masked_mean_gradient_with_non_finite_valid_values():
    """A valid inf keeps its place in the result and its share of the gradient; padding gets none."""
    x = torch.randn(3, 5, 2, generator=gen(17))
    mask = lengths_mask([5, 3, 2], 5)
    x = padded_with(x, mask, NAN)
    x[1, 2, 0] = INF  # valid
    x[2, 0, 1] = -INF  # valid
    upstream = torch.randn(3, 2, generator=gen(18))
    with because("masked_mean could not be backpropagated with inf at valid positions"):
        got, grad = masked_mean_backward(x, mask, 1, upstream)
    want = loop_masked_mean(x, mask)
    assert same_values(got, want), (
        "with inf and -inf at valid positions, their examples' means must be inf and -inf: "
        f"{first_difference(got, want)}"
    )
    counts = mask.sum(1).to(x.dtype)
    want_grad = mask[..., None] * (upstream / counts[:, None])[:, None, :]
    assert grad is not None and same_values(grad, want_grad, atol=1e-6), (
        "every valid position, the ones holding inf included, must receive upstream / count "
        "and every padded one exactly 0: a valid value must not be masked out as if it were "
        f"padding ({first_difference(grad, want_grad) if grad is not None else 'no gradient'})"
    )


# ---- ch06a.2 sequence_scores (repair) ----------------------------------------------


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "B, T, E, fill",
    [
        (1, 5, 3, 1e4),
        (6, 6, 6, INF),
        (3, 9, 16, NAN),
        (2, 3, 1, -1e4),
        (3, 1, 4, 0.0),
        (1, 1, 2, 0.0),
    ],
    ids=str,
)
def test_sequence_scores_other_sizes(B, T, E, fill):
    """One score per example for any B (also 1), padding of any value ignored."""
    x = torch.randn(B, T, E, generator=gen(E))
    lengths = [max(1, T - 2 * b) for b in range(B)]
    mask = lengths_mask(lengths, T)
    want = loop_scores(x, mask, make_head("linear", E, seed=B * 100 + T))
    got = scores_checked(padded_with(x, mask, fill), mask, "linear", seed=B * 100 + T)
    assert tuple(got.shape) == (B,), (
        f"sequence_scores on x[{B}, {T}, {E}] must return shape ({B},), got {tuple(got.shape)}: "
        "exactly one score per example, whatever B is"
    )
    judge.close(
        got,
        want,
        f"sequence_scores on x[{B}, {T}, {E}] with padding {fill:g} is not the mean of the valid "
        f"positions' scores (the head's output at padded positions must not reach the mean): "
        f"{first_difference(got, want, atol=1e-4)}",
        atol=1e-4,
        rtol=1e-4,
    )


EDGE_MASKS = {  # (B, T): masks with an empty (all-padding) row wherever the size allows one
    (1, 1): ([[True]], [[False]]),
    (2, 1): ([[True], [False]], [[False], [True]]),
    (1, 2): ([[False, True]], [[True, False]]),
    (2, 2): ([[True, False], [False, False]],),
    (3, 1): ([[False], [True], [True]],),
    (0, 3): ([],),  # a batch of no examples
    (2, 0): ([[], []],),  # examples of no positions: every row empty
}


def check_scores_at_the_edges():
    """sequence_scores with B, T or E of 1 and padded (even empty) rows, with and without a head:
    shape (B,), the mean of the valid positions' scores, 0 for a row with none; a batch of
    no examples (B == 0) gives shape (0,), examples of no positions (T == 0) give 0 each."""
    for (b, t), masks in EDGE_MASKS.items():
        for e in (1, 3) if b * t else (3,):
            x = torch.randn(b, t, e, generator=gen(b * 10 + t * 3 + e)) + 2.0
            for rows in masks:
                mask = torch.tensor(rows, dtype=torch.bool).view(b, t)
                padded = padded_with(x, mask, 1e4)
                for kind in (None, "linear"):
                    what = (
                        f"sequence_scores(x[{b}, {t}, {e}], mask={rows}"
                        f"{'' if kind is None else ', a ' + kind + ' head'})"
                    )
                    empty = (
                        ""
                        if b * t
                        else f" (a batch of {'no examples' if b == 0 else 'examples of no positions'}"
                        ": legal tensors, as the last batch of a filtered dataset can be; a "
                        "result put together from per-example pieces with torch.stack or "
                        "torch.cat has nothing to join when B == 0)"
                    )
                    with because(f"{what} raised{empty}"):
                        got = (
                            fs.sequence_scores(padded, mask)
                            if kind is None
                            else scores_with_head(padded, mask, kind, seed=e)
                        )
                    head = (lambda v: v.mean()) if kind is None else make_head(kind, e, seed=e)
                    want = loop_scores(x, mask, head) if b else torch.zeros(0)
                    assert isinstance(got, torch.Tensor) and tuple(got.shape) == (b,), (
                        f"{what} returned {brief(got)}: one score per example, shape ({b},), "
                        "whatever B and T are (drop only the head's own size-1 axis: a squeeze "
                        f"of every size-1 axis also removes B or T when they are 1){empty}"
                    )
                    assert judge.is_close(got, want, atol=1e-4, rtol=1e-4), (
                        f"{what} returned {got.tolist()}, expected {want.tolist()} (padding "
                        "holds 1e4): each example averages its own valid positions' scores over "
                        "the T axis, and a row with none gives 0; at T == 1 a lost position axis "
                        "makes the mean run over the batch instead"
                    )


@pytest.mark.task("ch06a.2")
def test_sequence_scores_default_head_ignores_padding():
    """Without a head, each position scores its features' mean; padding never counts; with any head and B, T or E of 1 (empty rows included) the shape is [B] and only valid positions count."""
    check_scores_at_the_edges()
    for valid, t, dtype in LONG_ROWS[:2]:
        keep = torch.arange(t) < valid
        long_x = torch.where(keep[None, :, None], torch.ones(1, t, 2), torch.full((), NAN))
        got = fs.sequence_scores(long_x, keep.to(dtype)[None])
        assert judge.is_close(got, torch.ones(1), atol=1e-5, rtol=1e-5), (
            f"sequence_scores(x[1, {t}, 2] of ones, a {dtype} mask with {valid} valid positions) "
            f"without a head gave {brief(got)}, expected [1.]: count the valid positions from the "
            f"mask turned into bool; a {dtype} sum rounds past {valid - 1}"
        )
    x = torch.randn(5, 5, 5, generator=gen(21))
    mask = lengths_mask([1, 5, 2, 4, 3], 5)
    want = loop_scores(x, mask, lambda v: v.mean())
    one = fs.sequence_scores(x[:, :1], mask[:, :1])  # T == 1: one position per example
    assert tuple(one.shape) == (5,) and judge.is_close(
        one, x[:, 0].mean(-1), atol=1e-5, rtol=1e-5
    ), (
        f"sequence_scores(x[5, 1, 5], mask[5, 1]) without a head returned {brief(one)}: with a "
        "single position each example's score is that position's feature mean (squeeze only the "
        "head's own size-1 axis, never the positions)"
    )
    for fill in (0.0, 1e6, -1e6, INF, NAN):
        got = fs.sequence_scores(padded_with(x, mask, fill), mask)
        assert tuple(got.shape) == (5,), (
            f"sequence_scores without a head returned shape {tuple(got.shape)} for 5 examples; "
            "one score per example is shape (5,)"
        )
        judge.close(
            got,
            want,
            f"sequence_scores without a head changes when padded positions hold {fill:g}: "
            "only valid positions may count",
            atol=1e-4,
            rtol=1e-5,
        )


@pytest.mark.task("ch06a.2")
@pytest.mark.parametrize("B, T, E", [(3, 7, 5), (5, 5, 5), (1, 4, 2)], ids=str)
def test_sequence_scores_with_a_nonlinear_head(B, T, E):
    """With a non-linear head, every position is scored first and the valid scores averaged."""
    x = torch.randn(B, T, E, generator=gen(B + T + E)) * 2
    mask = lengths_mask([max(1, T - 3 * b) for b in range(B)], T)
    want = loop_scores(x, mask, make_head("mlp", E, seed=T))
    got = scores_checked(padded_with(x, mask, 3.0), mask, "mlp", seed=T)
    assert tuple(got.shape) == (B,), (
        f"sequence_scores(x[{B}, {T}, {E}], mask, an MLP head) returned shape "
        f"{tuple(got.shape)}, expected ({B},): one score per example"
    )
    assert judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        "with a head that is not linear, sequence_scores must score every position first and "
        "then average the valid positions' scores; averaging the features before the head is "
        f"only the same for a linear head ({first_difference(got, want)})"
    )


@probe
def scores_gradients(x, mask, kind, seed):
    """The gradient of sequence_scores(x, mask, head).sum() for the head's parameters and x."""
    head = make_head(kind, x.shape[-1], seed)
    x = x.clone().requires_grad_(True)
    fs.sequence_scores(x, mask, head).sum().backward()
    return [p.grad for p in head.parameters()], x.grad


@pytest.mark.task("ch06a.2")
def test_sequence_scores_gradients_reach_the_head():
    """Gradients flow to the head's parameters and the valid positions, never to padding."""
    x = torch.randn(3, 5, 4, generator=gen(23))
    mask = lengths_mask([5, 2, 3], 5)
    with because("sequence_scores(...).sum() could not be backpropagated"):
        got_params, got_x = scores_gradients(x, mask, "mlp", 23)
    head = make_head("mlp", 4, 23)
    xr = x.clone().requires_grad_(True)
    total = sum(
        torch.stack([head(xr[b, t]).reshape(()) for t in range(5) if mask[b, t]]).mean()
        for b in range(3)
    )
    total.backward()
    for got, p in zip(got_params, head.parameters()):
        assert got is not None and judge.is_close(got, p.grad, atol=1e-5, rtol=1e-5), (
            "the head's parameters must receive the gradient of the pooled scores (nothing "
            "detached, no torch.no_grad inside sequence_scores)"
        )
    assert got_x is not None and judge.is_close(got_x, xr.grad, atol=1e-5, rtol=1e-5), (
        f"the gradient reaching x must be that of the mean of the valid positions' scores: "
        f"{first_difference(got_x, xr.grad) if got_x is not None else 'None'}"
    )


@pytest.mark.task("ch06a.2")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "B, T, E, value", [(3, 6, 5, NAN), (5, 5, 5, INF), (2, 4, 1, -INF)], ids=str
)
def test_sequence_scores_keeps_non_finite_valid_positions(B, T, E, value):
    """A valid position whose features hold inf or nan gives its example a non-finite score; padding never does."""
    x = torch.randn(B, T, E, generator=gen(60 + E))
    mask = lengths_mask([max(1, T - b) for b in range(B)], T)
    x = padded_with(x, mask, INF if math.isnan(value) else NAN)  # padding: never counts
    x[0, 0, 0] = value  # the first position of example 0 (always valid)
    x[B - 1, T - B, E - 1] = value  # the last valid position of the last example
    want = loop_scores(x, mask, make_head("linear", E, seed=T))
    got = scores_checked(x, mask, "linear", seed=T)
    assert tuple(got.shape) == (B,) and same_values(got, want, atol=1e-4), (
        f"sequence_scores on x[{B}, {T}, {E}] with {value} at valid positions of examples 0 and "
        f"{B - 1} returned {got.tolist()}, expected {want.tolist()}: the head's score of a valid "
        "position counts as it is, however large or undefined; only padding is ignored"
    )


@probe
def scores_leave_inputs(x, mask, kind, seed):
    """sequence_scores(x, mask, head) on copies: the result, then x and mask after the call."""
    x, mask = x.clone(), mask.clone()
    head = None if kind is None else make_head(kind, x.shape[-1], seed)
    with torch.no_grad():
        out = fs.sequence_scores(x, mask, head)
    return out, x, mask


@pytest.mark.task("ch06a.2")
@pytest.mark.parametrize("kind", [None, "linear"], ids=str)
def test_sequence_scores_leaves_its_inputs_alone(kind):
    """sequence_scores changes neither x nor mask (no padding zeroed in the caller's tensor)."""
    x = padded_with(torch.randn(3, 4, 3, generator=gen(25)), lengths_mask([4, 1, 2], 4), 9.0)
    mask = lengths_mask([4, 1, 2], 4)
    got, x_after, mask_after = scores_leave_inputs(x, mask, kind, 25)
    want = loop_scores(x, mask, (lambda v: v.mean()) if kind is None else make_head(kind, 3, 25))
    assert tuple(got.shape) == (3,) and judge.is_close(got, want, atol=1e-5, rtol=1e-5), (
        f"sequence_scores(x[3, 4, 3], mask[3, 4]) returned {brief(got)}, expected "
        f"{[round(v, 4) for v in want.tolist()]}: one score per example, the mean of its valid "
        "positions' scores"
    )
    assert judge.is_equal(x_after, x) and judge.is_equal(mask_after, mask), (
        "sequence_scores modified the tensor it was given (its padding was overwritten in "
        "place, e.g. x[~mask] = 0 or masked_fill_): the caller's x and mask must be left "
        "unchanged — let the mask do the work when pooling"
    )


# ---- ch06a.3 hinge_loss ------------------------------------------------------------


@probe
def hinge_cases(cases):
    """hinge_loss(scores, y[, reduction]) for each (shape, scores dtype, labels dtype,
    reduction or None to leave it out, seed): (scores, y, ("returned", loss) or ("raised",
    the error's last line)), a NotImplementedError included (torch raises one for an op
    with no kernel in that dtype). A fifth of the scores sit exactly on the margin
    (y * score == 1), some at 0 and some far out."""
    seen = []
    for shape, s_dtype, y_dtype, reduction, seed in cases:
        g = torch.Generator().manual_seed(seed)
        y = torch.where(torch.rand(shape, generator=g) < 0.5, -1, 1)
        scores = torch.randn(shape, generator=g, dtype=torch.float64) * 2
        where = torch.rand(shape, generator=g)
        scores = torch.where(where < 0.2, y.double(), scores)  # on the margin
        scores = torch.where((where >= 0.2) & (where < 0.3), 0.0, scores)
        scores = torch.where(where >= 0.9, scores * 500, scores)  # far from it
        scores, y = scores.to(s_dtype), y.to(y_dtype)
        args = (scores, y) if reduction is None else (scores, y, reduction)
        try:
            seen.append((scores.clone(), y.clone(), ("returned", fs.hinge_loss(*args))))
        except Exception as exc:  # reported per case, on the trusted side (the stub's too)
            seen.append((scores, y, ("raised", last_line(exc))))
    return seen


HINGE_TOLERANCE = {  # (atol, rtol) by the scores' dtype: its own rounding, not a wider one
    torch.float64: (1e-12, 1e-10),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (2e-2, 1e-2),
    torch.bfloat16: (2e-1, 2e-2),
}
HINGE_SWEEP_SHAPES = [(), (0,), (1,), (6,), (5, 1), (1, 4), (3, 3), (2, 3, 4), (24,)]
HINGE_LABEL_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
]

HINGE_REDUCTIONS = [None, "mean", "sum", "none"]


def hinge_dtype_grid():
    """Every (scores dtype, labels dtype) pair twice: once 0-d and once with axes (one
    example, a column, a table, three axes or none), the reductions taking turns so that
    each scores dtype meets each reduction in both kinds of shape (an empty batch with
    "sum" or "none" only: its mean is nan)."""
    cases, dims = [], [(5,), (0,), (3, 1), (2, 3, 2), (1,)]
    for i, s_dtype in enumerate(HINGE_TOLERANCE):
        for j, y_dtype in enumerate(HINGE_LABEL_DTYPES):
            k = i * len(HINGE_LABEL_DTYPES) + j
            shape, reduction = dims[k % len(dims)], HINGE_REDUCTIONS[(k + 1) % 4]
            if shape == (0,) and reduction in (None, "mean"):
                reduction = "sum" if reduction is None else "none"
            cases.append(((), s_dtype, y_dtype, HINGE_REDUCTIONS[k % 4], 500 + k))
            cases.append((shape, s_dtype, y_dtype, reduction, 600 + k))
    return cases


@examples(4)
@example(cases=hinge_dtype_grid())  # the loss's dtype, for every pair of dtypes, in every run
@example(  # every floating dtype of the scores, each reduction, in every run
    cases=[
        ((6,), torch.float16, torch.int64, "none", 11),
        ((5, 1), torch.bfloat16, torch.float32, None, 12),
        ((2, 3), torch.bfloat16, torch.bfloat16, "sum", 13),
        ((3, 3), torch.float16, torch.float16, "mean", 14),
        ((24,), torch.float32, torch.int8, "mean", 15),
        ((1, 4), torch.float64, torch.int32, "none", 16),
    ]
)
@given(
    cases=st.lists(
        st.tuples(
            st.sampled_from(HINGE_SWEEP_SHAPES),
            st.sampled_from(list(HINGE_TOLERANCE)),
            st.sampled_from(HINGE_LABEL_DTYPES),
            st.sampled_from([None, "mean", "sum", "none"]),
            st.integers(0, 10_000),
        ),
        min_size=6,
        max_size=8,
    )
)
def check_hinge_matches_the_reference_on_generated_inputs(cases):
    cases = [c for c in cases if not (c[0] == (0,) and c[3] in (None, "mean"))]  # no mean of 0
    with because(f"hinge_loss raised on one of the calls {cases}"):
        seen = hinge_cases(cases)
    assert isinstance(seen, list) and len(seen) == len(cases), "one result per call"
    for _, _, (kind, got) in seen:  # an untouched stub is a TODO, not a wrong answer
        if kind == "raised" and got.startswith("NotImplementedError: "):
            todo = NotImplementedError(got.removeprefix("NotImplementedError: "))
            if is_stub_todo(todo):
                raise todo
    wrong = []
    for (shape, s_dtype, y_dtype, reduction, _), (scores, y, (kind, got)) in zip(cases, seen):
        want = ref.hinge_loss(scores.double(), y, reduction or "mean").double()
        atol, rtol = HINGE_TOLERANCE[s_dtype]
        if kind == "raised" and s_dtype in (torch.float16, torch.bfloat16):
            problem = (
                f"raised {got}: {s_dtype} scores are a legal input (the contract takes a "
                "tensor of any floating dtype, and a half-precision model's head emits them), "
                "yet a torch op the code calls has no kernel for that dtype here. The hinge "
                "is element-by-element arithmetic that every floating dtype supports: compute "
                "it with ops that accept every floating dtype"
            )
        elif kind == "raised":
            problem = f"raised {got}"
        elif not isinstance(got, torch.Tensor) or not got.is_floating_point():
            problem = f"returned {brief(got)}, not a floating-point tensor"
        elif tuple(got.shape) != tuple(want.shape):
            problem = f"returned shape {list(got.shape)}, expected {list(want.shape)}"
        elif got.dtype != s_dtype:
            problem = (
                f"returned a {got.dtype} loss for {s_dtype} scores and {y_dtype} labels: the "
                "loss comes back in the scores' dtype, whatever the labels' dtype, the shape (a "
                "0-d score or an empty batch included) or the reduction. Look at type promotion: "
                "a tensor of another floating dtype in the arithmetic (labels of another "
                "precision, or a constant such as the zero built as a tensor of the default "
                "dtype, which wins against a 0-d score) or a reduction accumulated in, or "
                "rebuilt as, another dtype decides the result's dtype; only the scores should"
            )
        elif not judge.is_close(got.double(), want, atol=atol, rtol=rtol):
            problem = (
                f"returned {brief(got)}, expected {brief(want)} (within {atol:g} + {rtol:g} * "
                f"|expected|: the rounding of {s_dtype} itself): "
                f"{first_difference(got.double(), want, atol=atol, rtol=rtol)}"
            )
        else:
            continue
        call = (
            f"hinge_loss(scores{list(shape)} {s_dtype}, y {y_dtype}"
            f"{'' if reduction is None else f', {reduction!r}'})"
        )
        wrong.append((len(shape) and shape[0], call, scores, y, problem))
    if wrong:
        _, call, scores, y, problem = min(wrong, key=lambda w: w[0])  # the smallest
        raised = sorted({str(c[1]) for c, (_, _, r) in zip(cases, seen) if r[0] == "raised"})
        raised = f"; calls with {' or '.join(raised)} scores raised" if raised else ""
        raise AssertionError(
            f"{call} with scores {brief(scores)} and labels {brief(y)} (the smallest of "
            f"{len(wrong)} of {len(cases)} calls that went wrong{raised}) {problem}. The loss is "
            "max(0, 1 - y * score) element by element in the scores' precision (float64 "
            "stays float64; an int or float label multiplies exactly), exactly 0 on the margin "
            "y * score == 1, reduced by the named reduction (mean when left out) over every "
            "element, for any shape the two share: a batch of none included"
        )


@pytest.mark.task("ch06a.3")
def test_hinge_loss_random_and_integer_labels():
    """hinge_loss is max(0, 1 - y * score) per example, for float and integer labels; and as the reference on generated shapes, scores of every floating dtype (float16 and bfloat16 included), margins and reductions."""
    check_hinge_matches_the_reference_on_generated_inputs()
    scores = torch.randn(50, generator=gen(31)) * 2
    y = torch.where(torch.rand(50, generator=gen(32)) < 0.5, -1, 1)  # int64 labels
    want = [max(0.0, 1 - float(yi) * float(si)) for si, yi in zip(scores, y)]
    got = fs.hinge_loss(scores, y, reduction="none")
    assert tuple(got.shape) == (50,) and judge.is_close(
        got.double(), torch.tensor(want, dtype=torch.float64), atol=1e-6, rtol=1e-5
    ), "hinge_loss per example must be max(0, 1 - y * score), also for integer labels"
    judge.close(
        fs.hinge_loss(scores, y).double(),
        torch.tensor(sum(want) / 50, dtype=torch.float64),
        "the default reduction is the mean over examples",
        atol=1e-12,
        rtol=1e-5,
    )
    judge.close(
        fs.hinge_loss(scores, y.float(), "sum").double(),
        torch.tensor(sum(want), dtype=torch.float64),
        "reduction='sum' is the sum over examples",
        atol=1e-12,
        rtol=1e-5,
    )


@pytest.mark.task("ch06a.3")
def test_hinge_loss_refuses_an_unknown_reduction():
    """Any reduction other than "mean", "sum" or "none" is a ValueError, never another reduction."""
    scores, y = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 1.0, -1.0])
    # both sides of each name, and None: the object None is no name, not even "none"
    for name in ("avg", "max", "median", "total", "sums", "Mean", None, "none "):
        with pytest.raises(ValueError):
            got = fs.hinge_loss(scores, y, reduction=name)
            pytest.fail(
                f"hinge_loss(..., reduction={name!r}) returned {brief(got)} instead of raising "
                'ValueError: the reductions are the three names "mean", "sum" and '
                '"none" exactly; anything else (a misspelling, None) must not fall back to one'
            )


@pytest.mark.task("ch06a.3")
def test_hinge_loss_keeps_a_matching_2d_shape():
    """Scores and labels of the same (N, 1) shape are compared element by element."""
    scores = torch.tensor([[0.5], [-2.0], [3.0]])
    y = torch.tensor([[1.0], [1.0], [-1.0]])
    got = fs.hinge_loss(scores, y, reduction="none")
    assert tuple(got.shape) == (3, 1) and judge.is_close(
        got, torch.tensor([[0.5], [3.0], [4.0]]), atol=1e-8, rtol=1e-5
    ), (
        f"hinge_loss on matching (3, 1) scores and labels must return (3, 1) per-example losses, "
        f"got {brief(got)}"
    )


# A table, a row, a column, three axes, one example and a 0-d score: any shape that
# scores and labels share.
HINGE_SHAPES = [(4, 3), (1, 5), (7, 1), (2, 3, 2), (1,), ()]


@pytest.mark.task("ch06a.3")
def test_hinge_loss_reduces_every_shape_over_all_its_elements():
    """For scores and labels of any one shape (0-d, [N], [N, 1], [1, K], [N, K], three axes), "none" keeps that shape and "sum" and "mean" reduce over every element, as torch's reductions do."""
    for i, shape in enumerate(HINGE_SHAPES):
        g = gen(700 + i)
        scores = torch.randn(shape, generator=g) * 2
        y = torch.where(torch.rand(shape, generator=g) < 0.5, -1, 1)  # int64 labels
        if i % 2:
            y = y.float()
        want = torch.clamp(1 - y.double() * scores.double(), min=0)
        call = f"hinge_loss(scores{list(shape)}, y{list(shape)} {y.dtype}"
        with because(f"{call}, reduction='none') raised on scores and labels of one shape"):
            got = fs.hinge_loss(scores, y, reduction="none")
        assert tuple(got.shape) == shape and judge.is_close(
            got.double(), want, atol=1e-6, rtol=1e-5
        ), (
            f"{call}, reduction='none') returned {brief(got)}: expected max(0, 1 - y * score) "
            f"element by element, in the shape {list(shape)} the two share"
        )
        for reduction, total in (("sum", want.sum()), ("mean", want.mean())):
            with because(
                f"{call}, reduction={reduction!r}) raised: scores and labels of one shape, any "
                "shape (a 0-d score is one example), reduce over every element as torch does"
            ):
                got = fs.hinge_loss(scores, y, reduction=reduction)
            if judge.is_close(got.double(), total, atol=1e-6, rtol=1e-5):
                continue
            per_row = (
                len(shape) > 1
                and shape[0] != want.numel()
                and judge.is_close(got.double(), want.sum() / shape[0], atol=1e-6, rtol=1e-5)
            )
            raise AssertionError(
                f"{call}, reduction={reduction!r}) returned {brief(got)}, expected the 0-d "
                f"{reduction} of all {want.numel()} per-element losses, {float(total):.6g}"
                + (
                    f": that is the sum divided by the first axis' {shape[0]} (len), not by "
                    f"the {want.numel()} elements. Reduce as torch does, over every element "
                    "(losses.mean(), losses.sum()), whatever the shape"
                    if per_row
                    else ": reduce as torch does, over every element (losses.mean(), "
                    "losses.sum()), to one number, whatever the shape"
                )
            )


@probe
def hinge_gradient(scores, y, reduction):
    """d hinge_loss(scores, y, reduction) / d scores."""
    scores = scores.clone().requires_grad_(True)
    fs.hinge_loss(scores, y, reduction=reduction).backward()
    return scores.grad


@pytest.mark.task("ch06a.3")
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_hinge_loss_gradient(reduction):
    """The hinge's gradient is -y inside the margin and 0 outside it (divided by N for the mean)."""
    scores = torch.tensor([3.0, 0.2, -0.5, 1.5, -2.0])
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, -1.0])
    with because(f"hinge_loss(..., reduction={reduction!r}) could not be backpropagated"):
        grad = hinge_gradient(scores, y, reduction)
    want = torch.tensor([0.0, -1.0, 1.0, 1.0, 0.0]) / (5 if reduction == "mean" else 1)
    assert grad is not None and judge.is_close(grad, want, atol=1e-8, rtol=1e-5), (
        "the hinge's gradient is -y for examples inside the margin (y * score < 1) and 0 outside "
        f"it: {first_difference(grad, want) if grad is not None else 'no gradient'}"
    )


@pytest.mark.task("ch06a.3")
@pytest.mark.points(3)
@pytest.mark.parametrize(
    "s_shape, y_shape",
    [((3,), (3, 1)), ((5,), (1,)), ((2, 3), (3, 2)), ((4, 1), (1, 4)), ((), (1,))],
    ids=str,
)
def test_hinge_loss_refuses_every_shape_mismatch(s_shape, y_shape):
    """Scores and labels of different shapes raise ValueError, even when they would broadcast."""
    scores, y = torch.zeros(s_shape), torch.ones(y_shape)
    with pytest.raises(ValueError):
        fs.hinge_loss(scores, y)
        pytest.fail(
            f"hinge_loss(scores{list(s_shape)}, y{list(y_shape)}) did not raise ValueError: "
            "shapes that differ would broadcast (or be reshaped) silently"
        )


@pytest.mark.task("ch06a.3")
def test_hinge_loss_lets_non_finite_scores_through():
    """A nan score gives a nan loss and an infinite score on the wrong side an infinite one: a diverged score is never hidden; on the right side an infinite score gives 0, and a loss near a dtype's largest number stays finite, in every floating dtype."""
    scores = torch.tensor([NAN, -INF, 0.5, INF, 2.0])
    y = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    want = torch.tensor([NAN, INF, 0.5, INF, 3.0])  # max(0, 1 - y * score)
    got = fs.hinge_loss(scores, y, reduction="none")
    assert same_values(got, want), (
        f"hinge_loss(scores={scores.tolist()}, y={y.tolist()}, reduction='none') returned "
        f"{got.tolist()}, expected {want.tolist()}: a nan score must give a nan loss and an "
        "infinite score on the wrong side an infinite loss — a comparison such as "
        "where(margin > 0, margin, 0), or a library loss that compares inside its kernel, "
        "turns nan into 0 (nan > 0 is False); clamp(min=0) keeps it"
    )
    # every floating dtype: infinite scores on the right side (loss 0, not inf - inf) and
    # finite scores so large that 1 - y * score is near the dtype's largest number (a loss
    # that doubles the margin on the way, as (m + |m|) / 2 does, overflows there)
    for dtype in (torch.float64, torch.float16):  # float32 and bfloat16 compute alike
        big = 0.75 * torch.finfo(dtype).max
        odd = torch.tensor([INF, -INF, big, -big, big, -big, NAN, 0.5], dtype=dtype)
        labels = torch.tensor([1, -1, -1, 1, 1, -1, 1, -1])
        want = torch.clamp(1 - labels.double() * odd.double(), min=0)
        got = fs.hinge_loss(odd, labels, reduction="none")
        atol, rtol = HINGE_TOLERANCE[dtype]
        assert got.dtype == dtype and judge.is_close(
            got.double(), want, atol=atol, rtol=rtol, equal_nan=True
        ), (
            f"hinge_loss(scores={odd.tolist()} ({dtype}), y={labels.tolist()}, "
            f"reduction='none') returned {got.tolist()} ({got.dtype}), expected max(0, 1 - y * "
            f"score) = {want.tolist()} in {dtype}: an infinite score on the right side is far "
            "outside the margin (loss 0, not nan), and a loss as large as the dtype allows must "
            "stay finite — look for arithmetic on the margin that makes inf - inf or doubles "
            "it past the dtype's largest number before halving; max(0, margin) (clamp) does "
            "neither"
        )
    mean, total = fs.hinge_loss(scores, y), fs.hinge_loss(scores, y, reduction="sum")
    assert math.isnan(float(mean)) and math.isnan(float(total)), (
        f"with a nan score the mean and the sum of the hinge losses must be nan, got "
        f"{float(mean)} and {float(total)}: a diverged score must show in the loss"
    )


# ---- ch06a.4 train_linear_svm ------------------------------------------------------


def objective(w, b, X, y, C):
    w, X, y = w.double(), X.double(), y.double()
    return 0.5 * float(w @ w) + C * float(torch.clamp(1 - y * (X @ w + b), min=0).sum())


def dual_lower_bound(X, y, C, tol=1e-6, max_iter=50_000):
    """A lower bound on min 0.5*||w||^2 + C * sum hinge (weak duality): the dual value
    sum(a) - 0.5 * a'Qa of a feasible a (0 <= a <= C, y'a = 0) that SMO improves until the
    KKT conditions hold within ``tol`` (or ``max_iter`` pair updates: still a lower bound).
    The pair is the most violating i and the j of the largest second-order gain (Fan, Chen
    and Lin 2005), which converges in far fewer updates when C is large."""
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    K = X @ X.T
    Q = np.outer(y, y) * K
    diag = np.diag(K)
    a, grad = np.zeros(len(y)), -np.ones(len(y))  # grad of 0.5 a'Qa - sum(a)
    for _ in range(max_iter):
        v = -y * grad
        up = np.flatnonzero(((a < C) & (y > 0)) | ((a > 0) & (y < 0)))
        low = np.flatnonzero(((a < C) & (y < 0)) | ((a > 0) & (y > 0)))
        i = up[np.argmax(v[up])]
        if v[i] - v[low].min() < tol:
            break
        below = low[v[low] < v[i]]
        curve = np.maximum(diag[i] + diag[below] - 2 * K[i, below], 1e-12)
        j = below[np.argmax((v[i] - v[below]) ** 2 / curve)]
        eta = K[i, i] + K[j, j] - 2 * K[i, j]
        t = (v[i] - v[j]) / eta if eta > 1e-12 else np.inf
        t = min(t, C - a[i] if y[i] > 0 else a[i], a[j] if y[j] > 0 else C - a[j])
        a[i] += y[i] * t
        a[j] -= y[j] * t
        grad += t * (y[i] * Q[:, i] - y[j] * Q[:, j])
    return float(a.sum() - 0.5 * a @ Q @ a)


def reached_and_bound(w, b, X, y, C, max_iter=50_000):
    """(the objective (w, b) reaches, a certified lower bound on its minimum, whether the
    first is within the few percent of the second that a trained SVM gets)."""
    got, bound = objective(w, float(b), X, y, C), dual_lower_bound(X, y, C, max_iter=max_iter)
    return got, bound, got <= bound * 1.06 + 1e-3


def svm_problem(seed, N, D, C, offset):
    g = gen(seed)
    X = torch.randn(N, D, generator=g) + offset
    y = torch.where(X[:, 0] - offset + 0.7 * torch.randn(N, generator=g) > 0, 1.0, -1.0)
    return X, y, C


SVM_PROBLEMS = {  # (seed, N, D, C, offset of the data from the origin)
    "overlapping-5d": (100, 24, 5, 1.0, 0.0),
    "offset-10d": (101, 30, 10, 0.5, 1.5),
    "wide-50d": (102, 20, 50, 0.1, 0.0),
    "far-offset-3d": (103, 30, 3, 1.0, 2.0),
    "negative-offset-20d": (104, 24, 20, 0.3, -1.0),
}


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
@pytest.mark.parametrize("name", list(SVM_PROBLEMS))
def test_svm_reaches_the_optimum(name):
    """The objective reached is within a few percent of a certified lower bound on its minimum."""
    X, y, C = svm_problem(*SVM_PROBLEMS[name])
    w, b = fs.train_linear_svm(X, y, C=C)
    got, bound, near = reached_and_bound(w, b, X, y, C)
    assert near, (
        f"train_linear_svm(C={C}) on {name} data reached objective {got:.4f}, but no (w, b) can go "
        f"below {bound:.4f} and the optimum is about there: minimize 0.5*||w||^2 + C * (sum, not "
        "mean) of the hinge losses over w and the bias b together, with a step that shrinks to 0"
    )


@pytest.mark.task("ch06a.4")
def test_svm_runs_the_steps_it_is_given():
    """Longer runs than the default 600 steps also end within a few percent of a certified
    lower bound: the step follows the run's own length."""
    for name, steps in (("overlapping-5d", 1500), ("offset-10d", 1000)):
        X, y, C = svm_problem(*SVM_PROBLEMS[name])
        with because(f"train_linear_svm(C={C}, steps={steps}) raised on {name} data"):
            w, b = fs.train_linear_svm(X, y, C=C, steps=steps)
        got, bound, near = reached_and_bound(w, b, X, y, C)
        assert near, (
            f"train_linear_svm(C={C}, steps={steps}) on {name} data reached objective "
            f"{got:.4f}, but no (w, b) can go below {bound:.4f} and the default 600 steps get "
            "there: a longer run must not end further away. Whatever schedule the step follows "
            "has to be one of this run's length (a decay written for 600 steps turns negative "
            "after them and climbs back up the objective)"
        )


def large_c_problems(seed=1, count=4):
    """Seeded draws where the hinge term dominates and the data sit off the origin: 40
    points in 2 or 3 dimensions shifted by 1.5 to 2.5 on every axis, C log-uniform in
    [3, 30] (the subgradient is then C * sum y x, tens of times the size of w); then two
    fixed draws of 40 and 50 points in 3 and 4 dimensions, C 20 and 30."""
    rng = random.Random(seed)
    problems = []
    for k in range(count):
        D = rng.choice([2, 3])
        offset = rng.choice([-1.0, 1.0]) * rng.uniform(1.5, 2.5)
        C = math.exp(rng.uniform(math.log(3.0), math.log(30.0)))
        problems.append(svm_problem(10 * seed + k, 40, D, C, offset) + (offset,))
    # two draws where a quasi-Newton method's line search stalls on the hinge's kinks and
    # ends 9-15% above the bound, while a step that shrinks reaches it within 1%
    for seed, N, D, C, offset in ((307, 40, 3, 20.0, 2.5), (321, 50, 4, 30.0, -3.0)):
        problems.append(svm_problem(seed, N, D, C, offset) + (offset,))
    return problems


@pytest.mark.task("ch06a.4")
def test_svm_reaches_the_optimum_when_c_is_large():
    """With a large C and data off the origin, the objective is within a few percent of a certified lower bound."""
    for X, y, C, offset in large_c_problems():
        w, b = fs.train_linear_svm(X, y, C=C)
        got, bound, near = reached_and_bound(w, b, X, y, C, max_iter=2000)
        assert near, (
            f"train_linear_svm(C={C:.2f}) on 40 points in {X.shape[1]} dimensions centred "
            f"{offset:+.2f} from the origin reached objective {got:.4f}, but no (w, b) can go "
            f"below {bound:.4f} and the optimum is about there ({got / bound:.2f} times it): with "
            "a large C the subgradient C * sum y x is many times the size of w, and with data "
            "off the origin w and b pull against each other, so a raw subgradient step scaled "
            "only by the learning rate overshoots and never settles, even while it shrinks; the "
            "step has to fit the size of the subgradient (Adam normalizes it per coordinate)"
        )


@pytest.mark.task("ch06a.4")
@pytest.mark.points(1)
def test_svm_needs_its_bias():
    """On data separable only by a plane away from the origin, every point is classified right."""
    X = torch.randn(200, 3, generator=gen(41)) + 1.5  # every feature around 1.5
    keep = (X[:, 0] - 1.5).abs() > 0.5  # a clear gap around x0 = 1.5
    X = X[keep]
    y = torch.where(X[:, 0] > 1.5, 1.0, -1.0)
    w, b = fs.train_linear_svm(X, y, C=1.0)
    acc = float(((X @ w.float() + float(b)).sign() == y).float().mean())
    assert acc == 1.0, (
        f"on data separable by the plane x0 = 1.5 (away from the origin), training accuracy is "
        f"{acc:.3f}: the plane needs an offset, so the bias b must be learned too"
    )


@pytest.mark.task("ch06a.4")
def test_svm_default_c_is_one():
    """Called without C, train_linear_svm answers as with C = 1.0 (the signature's default)."""
    X, y, _ = svm_problem(110, 30, 8, 1.0, 0.0)  # here w moves clearly between C = 0.5, 1, 2
    w = {C: fs.train_linear_svm(X, y, C=C)[0].double() for C in (0.5, 1.0, 2.0)}
    default = fs.train_linear_svm(X, y)[0].double()
    apart = min(float((w[1.0] - w[C]).norm()) for C in (0.5, 2.0))
    off = float((default - w[1.0]).norm())
    assert off <= 0.5 * apart, (
        f"train_linear_svm(X, y) returned a w {off:.3f} away from train_linear_svm(X, y, C=1.0) "
        f"(the answers for C = 0.5 and C = 2 lie {apart:.3f} from it): the signature's default "
        "is C = 1.0"
    )


def grid_minimum(x, y, C):
    """The 1-D soft-margin objective minimized on a coarse grid, then a fine one around it."""

    def search(ws, bs):
        Wg, Bg = torch.meshgrid(ws, bs, indexing="ij")  # (len(ws), len(bs))
        margins = y[:, None, None] * (x[:, None, None] * Wg + Bg)  # (N, len(ws), len(bs))
        obj = 0.5 * Wg**2 + C * torch.clamp(1 - margins, min=0).sum(0)
        k = int(obj.argmin())
        return float(obj.min()), float(Wg.flatten()[k]), float(Bg.flatten()[k])

    f64 = torch.float64
    _, w0, b0 = search(torch.linspace(0, 4, 201, dtype=f64), torch.linspace(-3, 3, 301, dtype=f64))
    best, _, _ = search(
        torch.linspace(w0 - 0.05, w0 + 0.05, 201, dtype=f64),
        torch.linspace(b0 - 0.05, b0 + 0.05, 201, dtype=f64),
    )
    return best


@pytest.mark.task("ch06a.4")
@pytest.mark.points(2)
def test_svm_reaches_the_optimum_of_a_one_dimensional_problem():
    """On overlapping 1-D data the objective is within 2% of the best value on a fine grid."""
    X = torch.tensor([[-3.0], [-2.0], [-1.5], [0.4], [-0.2], [0.5], [1.0], [2.5], [3.0]])
    y = torch.tensor([-1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # overlapping classes
    C = 0.5
    w, b = fs.train_linear_svm(X, y, C=C)
    best = grid_minimum(X[:, 0].double(), y.double(), C)
    got = objective(w, float(b), X, y, C)
    assert got <= best * 1.02 + 1e-3, (
        f"train_linear_svm with C={C} on overlapping 1-D data reaches objective {got:.4f}, but "
        f"{best:.4f} is attainable: minimize 0.5*||w||^2 + C * (sum, not mean, of the hinge losses)"
    )


@pytest.mark.task("ch06a.4")
def test_svm_c_trades_margin_for_fit():
    """A small C gives a much shorter w than a large C."""
    X = torch.randn(30, 50, generator=gen(43))
    y = torch.where(X[:, :5].sum(1) > 0, 1.0, -1.0)
    w_small, _ = fs.train_linear_svm(X, y, C=0.001)
    w_large, _ = fs.train_linear_svm(X, y, C=10.0)
    n_small, n_large = float(w_small.norm()), float(w_large.norm())
    assert n_small < 0.5 * n_large, (
        f"||w|| was {n_small:.3g} with C=0.001 and {n_large:.3g} with C=10: a small C weights the "
        "0.5*||w||^2 term more, so it must give a much shorter w"
    )


@pytest.mark.task("ch06a.4")
def test_svm_accepts_integer_labels_and_double_features():
    """Integer labels and float64 features give the same kind of answer: w [D], b a float."""
    X, y, C = svm_problem(105, 20, 4, 1.0, 1.0)
    with because("train_linear_svm raised on int64 labels and float64 features"):
        w, b = fs.train_linear_svm(X.double(), y.long(), C=C)
    assert tuple(w.shape) == (4,) and isinstance(b, float), (
        f"train_linear_svm must return (w of shape (4,), b a float), got {brief(w)} and {brief(b)}"
    )
    got, bound, near = reached_and_bound(w, b, X, y, C)
    assert near, (
        f"with int64 labels the objective reached is {got:.4f}, the optimum about {bound:.4f}: "
        "convert the labels to floats before multiplying (an integer tensor truncates)"
    )


@probe
def svm_inputs_after(X, y, C, steps):
    """train_linear_svm on copies of X and y: X and y after the call, and its (w, b)."""
    X, y = X.clone(), y.clone()
    w, b = fs.train_linear_svm(X, y, C=C, steps=steps)
    return X, y, w, b


@pytest.mark.task("ch06a.4")
def test_svm_leaves_its_inputs_alone():
    """train_linear_svm changes neither X nor y, also when they are already float64."""
    X, y, C = svm_problem(106, 16, 4, 1.0, 2.0)
    for labels in (y.double(), y.long()):
        X_after, y_after, w, b = svm_inputs_after(X.double(), labels, C, 50)
        # leaving the inputs alone earns its point only beside a real result
        judge.answer(w, (X.shape[1],), f"train_linear_svm(X float64, y {labels.dtype})'s w")
        judge.all_finite(b, f"train_linear_svm(X float64, y {labels.dtype})'s b, a float")
        assert judge.is_equal(X_after, X.double()) and judge.is_equal(y_after, labels), (
            f"train_linear_svm(X float64, y {labels.dtype}) modified the tensors it was given: "
            "X.to(torch.float64) returns X itself when it is float64 already, so an in-place "
            "change (X -= mean, y[y == 0] = -1, ...) reaches the caller's data — work on new "
            "tensors"
        )


@probe
def svm_in_layout(layout, X, y, C):
    """train_linear_svm with X and y rebuilt, same values, in ``layout`` (harness.layouts)."""
    return fs.train_linear_svm(laid_out(X, layout), laid_out(y, layout), C=C)


@pytest.mark.task("ch06a.4")
def test_svm_reaches_the_same_objective_in_any_layout():
    """X and y given transposed, strided or as a window of a bigger tensor reach the objective
    a contiguous copy reaches. (w, b) may move along a flat optimum: the objective may not.)"""
    X, y, C = svm_problem(*SVM_PROBLEMS["offset-10d"])
    w, b = svm_in_layout("contiguous", X, y, C)
    want = objective(w, float(b), X, y, C)
    for layout in LAYOUTS[1:]:
        with because(
            f"train_linear_svm raised on X[30, 10] given as a {layout} window: .view needs "
            "contiguous memory (reshape and matmul work on any layout)"
        ):
            w, b = svm_in_layout(layout, X, y, C)
        got = objective(w, float(b), X, y, C)
        assert abs(got - want) <= 1e-4 * abs(want), (
            f"train_linear_svm(C={C}) reached objective {got:.6f} on X[30, 10] given as a "
            f"{layout} window, but {want:.6f} on a contiguous copy of the same values: a "
            "transposed or sliced tensor is as valid an input as a contiguous one (.numpy(), "
            ".storage() and .data_ptr() see memory, not values)"
        )


# ---- ch06a.5 distance_concentration ------------------------------------------------


@probe
def generator_use(dims, n, seed, advance):
    """distance_concentration with a generator seeded ``seed`` and advanced by ``advance``
    draws: the contrasts, whether the global RNG changed, and the generator's next draws."""
    torch.manual_seed(1234)
    g = torch.Generator().manual_seed(seed)
    if advance:
        torch.rand(advance, generator=g)
    before = torch.random.get_rng_state()
    out = fs.distance_concentration(dims, n, g)
    return {
        "out": out,
        "global_untouched": judge.is_equal(before, torch.random.get_rng_state()),
        "next": torch.rand(8, generator=g),
    }


DIMS_FORMS = {  # every Sequence[int] form of the dims [1, 4, 7], a numpy array excluded
    "a list": lambda: [1, 4, 7],
    "a tuple": lambda: (1, 4, 7),
    "range(1, 8, 3)": lambda: range(1, 8, 3),
    "torch.Size": lambda: torch.Size([1, 4, 7]),
}


@probe
def dims_given_as(form, n, seed):
    """distance_concentration(dims, n, generator seeded ``seed``) with dims in ``form``."""
    return fs.distance_concentration(DIMS_FORMS[form](), n, torch.Generator().manual_seed(seed))


def check_every_sequence_of_dims():
    want = None
    for form in DIMS_FORMS:
        with because(f"distance_concentration(dims, 12, g) raised with dims given as {form}"):
            got = dims_given_as(form, 12, 9)
        ok = isinstance(got, list) and len(got) == 3 and all(math.isfinite(v) for v in got)
        assert ok, (
            f"distance_concentration(dims=[1, 4, 7] given as {form}, 12, g) returned {got!r}: "
            "one finite contrast per entry of any Sequence[int] (list, tuple, range, torch.Size)"
        )
        want = got if want is None else want
        assert got == want, (
            f"distance_concentration(dims=[1, 4, 7] given as {form}, 12, g) returned {got}, but "
            f"{want} as a list with the same seed: dims is read as a sequence of ints, its "
            "container type changes nothing"
        )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_draws_from_the_generator_it_is_given():
    """The points come from the generator passed in, in its current state, and from nothing else; dims may be any Sequence[int]."""
    check_every_sequence_of_dims()
    fresh = generator_use([3, 30], 20, 55, advance=0)
    moved = generator_use([3, 30], 20, 55, advance=5)
    assert fresh["global_untouched"], (
        "distance_concentration changed the global random state although a generator was given: "
        "draw with torch.rand(..., generator=generator), never reseed or use the global RNG"
    )
    assert fresh["out"] != moved["out"], (
        "the same generator, once fresh and once after 5 draws, gave identical contrasts: draw "
        "from the generator object itself (its current state), not from a copy of its seed"
    )
    untouched = torch.rand(8, generator=gen(55))
    assert judge.differ(fresh["next"], untouched, atol=0, rtol=0), (
        "after distance_concentration the generator is still in its initial state: the points "
        "must be drawn from it (not from a clone), so that the caller's next draws move on"
    )


@probe
def drawn_entry_by_entry(dims, n, seed):
    """distance_concentration(dims, n) once for the whole list and once per entry, in order,
    each run from its own generator seeded ``seed`` (the global one, seeded so, when ``seed``
    is negative): both results and each generator's next draws."""
    runs = {}
    for how, calls in (("whole", [list(dims)]), ("entry by entry", [[d] for d in dims])):
        if seed < 0:
            torch.manual_seed(-seed)
            out = [v for part in calls for v in fs.distance_concentration(part, n)]
            runs[how] = (out, torch.rand(6))
        else:
            g = torch.Generator().manual_seed(seed)
            out = [v for part in calls for v in fs.distance_concentration(part, n, g)]
            runs[how] = (out, torch.rand(6, generator=g))
    return runs


@pytest.mark.task("ch06a.5")
def test_every_entry_of_dims_draws_its_own_points():
    """A repeated dimension is measured again on new points: the generator moves on entry by entry, as one call per entry would move it."""
    for dims, n, seed in (([2, 2], 3, 5), ([10, 3, 10, 10], 6, 61), ([1, 1, 4], 4, -62)):
        call = f"distance_concentration({dims}, {n}{', g' if seed >= 0 else ''})"
        runs = drawn_entry_by_entry(dims, n, seed)
        (whole, whole_next), (split, split_next) = runs["whole"], runs["entry by entry"]
        assert len(whole) == len(dims), f"{call} returned {brief(whole)}: one contrast per entry"
        repeats = [
            (i, j) for i in range(len(dims)) for j in range(i + 1, len(dims)) if dims[i] == dims[j]
        ]
        same = [(i, j) for i, j in repeats if whole[i] == whole[j]]
        assert not same, (
            f"{call} returned {brief(whole)}: entries {same[0]} (both d = {dims[same[0][0]]}) "
            "have the identical contrast. Every entry of dims draws n new points from the "
            "generator, a repeated d included (it is another measurement, and the caller's "
            "generator must move on by it): do not reuse or cache the first result per d"
        )
        one_by_one = f"[distance_concentration([d], {n}, ...) for d in {dims}]"
        assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=0) for a, b in zip(whole, split)), (
            f"{call} returned {brief(whole)}, while {one_by_one} on a generator in the same state "
            f"returned {brief(split)}: for each entry of dims, in order, draw n points from the "
            "generator as it stands after the entries before it"
        )
        assert judge.is_equal(whole_next, split_next), (
            f"after {call} the generator's next draws differ from those after {one_by_one}: "
            "each entry of dims, repeated ones included, draws its own n points, so the caller's "
            "generator ends where one call per entry leaves it"
        )


@probe
def generator_after_counts(counts, d, seed):
    """For each n of ``counts``: distance_concentration([d], n) with a fresh generator seeded
    ``seed``, and that generator's next draws."""
    after = []
    for n in counts:
        g = torch.Generator().manual_seed(seed)
        fs.distance_concentration([d], n, g)
        after.append(torch.rand(4, generator=g))
    return after


@pytest.mark.task("ch06a.5")
def test_distance_concentration_draws_all_n_points_however_many():
    """n points are drawn whatever n is: 2500 and 2501 points in one dimension leave the
    generator in different places (a cap or a subsample for large n does not)."""
    counts = (2500, 2501)
    with because(f"distance_concentration([1], n, g) raised for n = {counts}"):
        first, second = generator_after_counts(counts, 1, 58)
    assert judge.differ(first, second, atol=0, rtol=0), (
        "distance_concentration([1], n, g) for n = 2500 and n = 2501 left the generator in the "
        "same place: both calls drew the same number of values, so at least one of them did not "
        "draw its n points. Draw all n whatever n is (the (n, n) table of 2501 points is 50 MB "
        "in float64): a cap or a subsample changes the quantity measured"
    )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_keeps_the_nearest_pair_of_many_points():
    """1500 points in 2-D, fifteen times: the nearest pair is about 1e-4 apart, never 0 (no two
    points coincide), so every contrast is finite."""
    with because("distance_concentration([2] * 15, 1500, g) raised"):
        got = contrasts([2] * 15, 1500, seed=59)
    bad = [v for v in got if not 0 < v < INF] if isinstance(got, list | tuple) else got
    assert len(got) == 15 and not bad, (
        f"distance_concentration([2] * 15, 1500) gave {brief(bad)} among its contrasts: among 1500 random points "
        "in the square the nearest two are about 1e-4 apart but never at the same place, so "
        "each contrast is finite. A distance of 0 between distinct points comes from the "
        "shortcut ||a||^2 + ||b||^2 - 2 a.b (what torch.cdist uses for more than 25 points): "
        "in float32 its rounding, about 1e-7 of ||a||^2, swamps a squared distance of 1e-8. "
        "Compute the distances in float64, or from the differences a - b"
    )


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_distance_concentration_values_and_order():
    """Contrasts follow the order of dims and match independent measurements of the same quantity."""
    got = contrasts([1000, 5], 60, seed=53)
    assert len(got) == 2 and got[0] < got[1], (
        f"contrasts for dims [1000, 5] were {got}: values must follow the order of dims"
    )
    ref_values = []
    for seed in range(5):  # the same quantity, measured independently
        p = torch.rand(60, 1000, generator=gen(600 + seed), dtype=torch.float64)
        d = torch.pdist(p)
        ref_values.append(float((d.max() - d.min()) / d.min()))
    lo, hi = min(ref_values) / 1.5, max(ref_values) * 1.5
    assert lo < got[0] < hi, (
        f"relative contrast of 60 uniform points in 1000-D was {got[0]:.3f}; independent "
        f"measurements give {min(ref_values):.3f}..{max(ref_values):.3f}: (max - min) / min of "
        "the plain (not squared) distances over distinct pairs"
    )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_two_points():
    """With two points there is one distance, so the contrast is 0."""
    got = contrasts([4, 40], 2, seed=54)
    assert len(got) == 2 and all(math.isclose(v, 0.0, abs_tol=1e-9) for v in got), (
        f"with two points there is one distance, so max == min and the contrast is 0; got {got}"
    )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_three_points_use_every_pair():
    """With three points all three pairwise distances count, so the contrast is positive."""
    got = contrasts([2, 7, 64], 3, seed=57)
    assert len(got) == 3 and all(0 < v < INF for v in got), (
        f"three random points have three different distances, so (max - min) / min > 0; got "
        f"{got}: use every distinct pair once (i < j), skipping only a point's distance to itself"
    )


@pytest.mark.task("ch06a.5")
def test_distance_concentration_without_a_generator():
    """Without a generator the global RNG is used: valid contrasts, repeatable under torch.manual_seed."""
    a = contrasts([2, 50], 30, seed=None, global_seed=3)
    b = contrasts([2, 50], 30, seed=None, global_seed=3)
    assert len(a) == 2 and all(0 < v < INF for v in a), (
        f"distance_concentration(dims, n) without a generator must still return one finite "
        f"contrast per dimension; got {a}"
    )
    assert a == b, (
        "with generator=None the points come from the global RNG, so the same torch.manual_seed "
        f"gives the same contrasts; got {a} and then {b}"
    )
    c = contrasts([2, 50], 30, seed=None, global_seed=4)
    assert c != a, (
        "with generator=None, torch.manual_seed(3) and torch.manual_seed(4) gave the same "
        f"contrasts {a}: the points must come from the global RNG (pass generator=None on to "
        "torch.rand), not from a fresh torch.Generator() that starts from the same state each time"
    )


@pytest.mark.task("ch06a.5")
@pytest.mark.points(2)
def test_distance_concentration_draws_uniform_points():
    """The points are uniform in the unit cube: in 1000-D the mean contrast over many draws is the cube's, not a Gaussian's."""
    got = contrasts([1000] * 40, 60, seed=58)
    assert len(got) == 40 and all(0 < v < INF for v in got), (
        f"distance_concentration([1000] * 40, 60) returned {brief(got)}; expected 40 finite "
        "positive contrasts"
    )
    mean = sum(got) / len(got)
    g = gen(700)  # the same quantity, measured independently
    measured = []
    for _ in range(40):
        d = torch.pdist(torch.rand(60, 1000, generator=g, dtype=torch.float64))
        measured.append(float((d.max() - d.min()) / d.min()))
    want = sum(measured) / len(measured)
    assert abs(mean - want) < 0.012, (
        f"over 40 draws of 60 points in 1000-D the mean relative contrast was {mean:.4f}; points "
        f"uniform in the unit cube [0, 1]^d give {want:.4f} (Gaussian points about 0.160, "
        "points on the cube's corners about 0.115): draw with torch.rand (uniform), not "
        "torch.randn or a rounded draw"
    )
