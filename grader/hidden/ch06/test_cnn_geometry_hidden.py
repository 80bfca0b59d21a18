"""Hidden tests for ch06: other shapes, many random layer configurations checked against
PyTorch's own layers, and receptive fields measured by backpropagation. Messages state
the property, not the test."""

import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from exercises.ch06.test_cnn_geometry import (  # helpers and probes shared with the public twin
    build_layer,
    cnn_built,
    cnn_forward,
    measured_receptive_field,
    nhwc_conv_built,
    nhwc_conv_checked,
    nhwc_conv_problem,
    receptive_field_of,
    rf_checked,
)
from harness import devices, judge
from harness.layouts import laid_out
from harness.probe import because, last_line, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
    from harness.generated import example, examples, given, st
except ImportError:  # (probes never use them)
    pass

cg = chapter_module("ch06", "cnn_geometry")
PROBES_USE = "build_layer"  # what the probes use besides themselves (harness/strip.py)


# ---------------------------------------------------------------- ch06.1


@pytest.mark.task("ch06.1")
@pytest.mark.points(1)  # one of its two points (for each shape) went to the every-dtype test
@pytest.mark.parametrize("shape", [(3, 4, 4, 4), (1, 5, 7, 3), (2, 2, 6, 2)], ids=str)
def test_channels_first_equals_the_axis_move(shape):
    """out[b, c, h, w] == x[b, h, w, c] for every pixel, on square and non-square batches."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))
    out = cg.to_channels_first(x)
    B, H, W, C = shape
    assert tuple(out.shape) == (B, C, H, W), (
        f"a [B, H, W, C] = {list(shape)} batch must become [B, C, H, W] = {[B, C, H, W]}, got {list(out.shape)}"
    )
    judge.equal(
        out,
        x.movedim(-1, 1),
        "out[b, c, h, w] must equal x[b, h, w, c] for every pixel: the channel axis has to move "
        "(permute), not the memory be relabelled (reshape/view), and height and width keep their order"
        + (
            " (here height and width were swapped)"
            if judge.is_equal(out, x.permute(0, 3, 2, 1))
            else ""
        ),
    )


# Shapes whose sizes suggest another layout: more than four channels on a small image, C == H,
# one image. A function that guesses the layout from the sizes (a "colour axis" of 1 to 4)
# leaves such a batch where it was; the docstring fixes the layout, [B, H, W, C], whatever
# the sizes.
@pytest.mark.task("ch06.1")
@examples(12)
@example(b=1, h=1, w=1, c=5)
@example(b=2, h=4, w=6, c=8)  # feature maps: 8 channels of height 4
@example(b=1, h=3, w=5, c=3)  # C == H
@example(b=1, h=2, w=2, c=4)  # C == 4 > H == W: it looks channels-first from both ends
@example(b=2, h=3, w=5, c=1)  # the size-one axes of earlier cases
@example(b=1, h=1, w=1, c=4)
@example(b=1, h=2, w=1, c=3)
@example(b=1, h=3, w=2, c=2)
@given(
    b=st.integers(1, 3),
    h=st.integers(1, 6),
    w=st.integers(1, 6),
    c=st.integers(1, 12),
)
def test_channels_first_whatever_the_sizes(b, h, w, c):
    """out[b, c, h, w] == x[b, h, w, c] for any sizes: C > 4, H < C, C == H, size-one axes, one image."""
    x = torch.arange(b * h * w * c, dtype=torch.float32).view(b, h, w, c)
    out = cg.to_channels_first(x)
    want = x.movedim(-1, 1)
    ok = tuple(out.shape) == tuple(want.shape) and judge.is_equal(out, want)
    assert ok, (
        f"to_channels_first on a [B, H, W, C] = {[b, h, w, c]} batch returned "
        f"{brief(out)}, expected shape {list(want.shape)} with out[b, c, h, w] == x[b, h, w, c]"
        + (
            ": the batch came back unmoved. The input is always [B, H, W, C]; its sizes never "
            "tell the layout (8 channels of height 4 are as channels-last as RGB), so move the "
            "last axis to dimension 1 every time, without a guess"
            if judge.is_equal(out, x)
            else ": move the channel axis with permute(0, 3, 1, 2), whatever the sizes"
        )
    )


@probe
def channels_first_of_a_view(shape, seed):
    """to_channels_first on a channels-last view whose memory is not in (B, H, W, C) order:
    the input as the function saw it, and the result."""
    B, H, W, C = shape
    base = torch.randn(B, W, H, C, generator=torch.Generator().manual_seed(seed))
    x = base.transpose(1, 2)  # [B, H, W, C], non-contiguous
    return x.clone(), cg.to_channels_first(x)


@pytest.mark.task("ch06.1")
def test_channels_first_on_a_non_contiguous_batch():
    """Pixels land at [b, c, h, w] also when the input batch is a non-contiguous view."""
    with because(
        "to_channels_first failed on a non-contiguous [B, H, W, C] view: .view() needs "
        "contiguous memory; permute works on any layout"
    ):
        x, out = channels_first_of_a_view((2, 4, 5, 3), seed=61)
    judge.equal(
        out,
        x.permute(0, 3, 1, 2),
        "on a non-contiguous [B, H, W, C] input every pixel must still land at [b, c, h, w]: "
        "the axes of the tensor move (permute), whatever its memory layout",
    )


IMAGE_DTYPES = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.uint8,
    torch.int8,
    torch.int32,
    torch.int64,
    torch.bool,
)


@probe
def channels_first_cases(cases):
    """to_channels_first on each (B, H, W, C, dtype, strided) batch of distinct values (a
    non-contiguous view when strided): (the input, ("returned", result) or ("raised", the
    error's last line))."""
    seen = []
    for B, H, W, C, dtype, strided in cases:
        n = B * H * W * C
        values = (torch.arange(n) % 2 if dtype == torch.bool else torch.arange(n) % 120 - 7).to(
            dtype
        )
        special = {torch.int64: [2**53 + 1], torch.int32: [2**24 + 1]}.get(dtype, [])
        if dtype.is_floating_point:  # values an arithmetic detour does not carry unchanged
            special = [float("inf"), float("nan"), -0.0, float("-inf")]
        k = min(n, len(special))
        values[:k] = torch.tensor(special[:k], dtype=dtype)
        x = values.view(B, W, H, C).transpose(1, 2) if strided else values.view(B, H, W, C)
        kept = x.clone()
        try:
            seen.append((kept, ("returned", cg.to_channels_first(x))))
        except NotImplementedError:
            raise
        except Exception as exc:  # reported per case, on the trusted side
            seen.append((kept, ("raised", last_line(exc))))
    return seen


def bit_patterns(t: torch.Tensor) -> list:
    """The stored bits of every entry (nan equals nan, -0.0 differs from 0.0)."""
    if t.dtype == torch.bool:
        return t.to(torch.uint8).tolist()
    if t.dtype.is_floating_point:
        as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        return t.contiguous().view(as_int).tolist()
    return t.tolist()


def same_values(out: torch.Tensor, want: torch.Tensor) -> bool:
    """Every entry of ``out`` is the entry of ``want`` bit for bit. The contract fixes the
    values, not the dtype: a result in another dtype (a uint8 image as float32) is compared
    with ``want`` converted to that dtype, so the one rounding that conversion makes is
    the only one allowed, and a detour that comes back to the input's dtype is exact."""
    if out.dtype == torch.bool and want.dtype != torch.bool:
        return False  # truth values are not the entries
    return bit_patterns(out) == bit_patterns(want.to(out.dtype))


@pytest.mark.task("ch06.1")
@pytest.mark.points(2)
@examples(4)
@given(
    cases=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(1, 5),
            st.integers(1, 5),
            st.integers(1, 6),
            st.sampled_from(IMAGE_DTYPES),
            st.booleans(),
        ),
        min_size=6,
        max_size=8,
    )
)
def test_channels_first_for_every_dtype_and_an_empty_batch(cases):
    """out[b, c, h, w] == x[b, h, w, c] exactly for batches of any dtype (bool, integers, half; inf, nan, -0.0, large integers), of no images, and non-contiguous ones."""
    with because(f"to_channels_first raised on one of the batches {cases}"):
        seen = channels_first_cases(cases)
    assert isinstance(seen, list) and len(seen) == len(cases), "one result per batch"
    wrong = []
    for (B, H, W, C, dtype, strided), (x, (kind, out)) in zip(cases, seen):
        want = x.permute(0, 3, 1, 2)
        if kind == "raised":
            problem = f"raised {out}"
        elif not isinstance(out, torch.Tensor):
            problem = f"returned {brief(out)}, not a tensor"
        elif tuple(out.shape) != tuple(want.shape) or not same_values(out, want):
            problem = (
                f"returned {brief(out)}, expected shape {list(want.shape)} with out[b, c, h, w] "
                f"== x[b, h, w, c] bit for bit (x holds {x.flatten()[:4].tolist()} first)"
            )
        else:
            continue
        wrong.append((B * H * W * C, (B, H, W, C), dtype, strided, problem))
    if wrong:
        _, shape, dtype, strided, problem = min(wrong, key=lambda w: w[0])  # the smallest
        raise AssertionError(
            f"to_channels_first on a {'non-contiguous ' if strided else ''}{dtype} [B, H, W, C] "
            f"= {list(shape)} batch (the smallest of {len(wrong)} of {len(cases)} batches it got "
            f"wrong) {problem}. Moving the channel axis only reorders entries "
            "(permute(0, 3, 1, 2)): it works for every dtype, keeps every value bit for bit "
            "(inf, nan, -0.0, integers past 2**24 and 2**53), and takes a batch of no images "
            "as well as a view; a matrix product or a detour through a dtype that cannot hold "
            "the values does not"
        )


# ---------------------------------------------------------------- ch06.2


def random_configs(seed, n, *, stride=(1, 1), dilation=(1, 1), padding=(0, 0), pairs=False):
    """n (h, w, kernel, stride, padding, dilation) configurations an nn.Conv2d accepts.
    stride, dilation and padding are (lo, hi) ranges; padding's hi may exceed the kernel.
    With ``pairs`` each argument is, at random, an int or a (height, width) pair."""
    rng = random.Random(seed)

    def draw(lo, hi):
        if pairs and rng.random() < 0.6:
            return (rng.randint(lo, hi), rng.randint(lo, hi))
        return rng.randint(lo, hi)

    out = []
    while len(out) < n:
        k, s, p, d = draw(1, 7), draw(*stride), draw(*padding), draw(*dilation)
        h, w = rng.randint(1, 40), rng.randint(1, 40)
        kk, pp, dd = (v if isinstance(v, tuple) else (v, v) for v in (k, p, d))
        if any(size + 2 * pp[i] < dd[i] * (kk[i] - 1) + 1 for i, size in enumerate((h, w))):
            continue
        out.append((h, w, k, s, p, d))
    return out


SWEEPS = {
    "stride-1": (
        dict(padding=(0, 3)),
        "a kernel of size k removes k-1 pixels and padding adds 2*padding: out = in + 2*padding - (k-1)",
    ),
    "strided": (
        dict(stride=(2, 5), padding=(0, 2)),
        "with a stride the count of windows rounds down (floor): a window that would hang over the "
        "edge is dropped, out = floor((in + 2*padding - span) / stride) + 1",
    ),
    "dilated": (
        dict(dilation=(2, 4), padding=(0, 3)),
        "a dilated kernel spans dilation*(k-1)+1 input pixels, not k",
    ),
    "wide-padding": (
        dict(stride=(1, 3), padding=(4, 9)),
        "padding larger than half the kernel (nn.Conv2d allows any) is added on both sides: "
        "size + 2*padding",
    ),
    "pairs": (
        dict(stride=(1, 4), dilation=(1, 3), padding=(0, 4), pairs=True),
        "(height, width) pairs apply per axis, the first entry to the height and the second to "
        "the width; an int means the same value on both axes",
    ),
}


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("sweep", list(SWEEPS))
def test_output_size_equals_nn_conv2d(sweep):
    """conv2d_output_hw equals the size a real nn.Conv2d produces, over random configurations."""
    opts, mechanism = SWEEPS[sweep]
    for h, w, k, s, p, d in random_configs(100 + list(SWEEPS).index(sweep), 50, **opts):
        with because(
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) "
            "raised, but nn.Conv2d accepts this configuration"
        ):
            got = cg.conv2d_output_hw(h, w, k, s, p, d)
        real = tuple(nn.Conv2d(1, 1, k, s, p, d, bias=False)(torch.zeros(1, 1, h, w)).shape[-2:])
        assert tuple(got) == real, (
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) returned {got}, "
            f"a real nn.Conv2d produces {real}: {mechanism}"
        )
        assert all(type(v) is int for v in got), (
            f"conv2d_output_hw returned {got!r}: both sizes must be Python ints"
        )


@pytest.mark.task("ch06.2")
def test_pairs_may_be_lists_as_in_pytorch():
    """A (height, width) pair may be a list, as nn.Conv2d accepts it: [3, 5] means (3, 5)."""
    for h, w, k, s, p, d in [
        (9, 14, [3, 5], [1, 2], [0, 1], [1, 1]),
        (20, 11, [5, 1], 2, [2, 0], [2, 1]),
    ]:
        with because(
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) "
            "raised, but nn.Conv2d takes pairs given as lists too: read a pair by position, "
            "whatever sequence holds it (isinstance(v, int) tells the single int apart)"
        ):
            got = cg.conv2d_output_hw(h, w, k, s, p, d)
        real = tuple(nn.Conv2d(1, 1, k, s, p, d, bias=False)(torch.zeros(1, 1, h, w)).shape[-2:])
        assert tuple(got) == real, (
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) "
            f"returned {got}, nn.Conv2d gives {real}: a list is a (height, width) pair as a tuple is"
        )


POOLS = {
    "maxpool": (lambda k, s, p, d: nn.MaxPool2d(k, s, p, d), (1, 3)),
    "avgpool": (lambda k, s, p, d: nn.AvgPool2d(k, s, p), (1, 1)),
}


@pytest.mark.task("ch06.2")
@pytest.mark.parametrize("kind", list(POOLS))
def test_output_size_equals_nn_pooling(kind):
    """conv2d_output_hw equals the size nn.MaxPool2d / nn.AvgPool2d produce (dilated windows too)."""
    make, dilations = POOLS[kind]
    rng = random.Random(62 + len(kind))
    checked = 0
    while checked < 60:
        k = (rng.randint(1, 5), rng.randint(1, 5))
        s = (rng.randint(1, 4), rng.randint(1, 4))
        p = (rng.randint(0, k[0] // 2), rng.randint(0, k[1] // 2))
        d = (rng.randint(*dilations), rng.randint(*dilations))
        h, w = rng.randint(1, 30), rng.randint(1, 30)
        if h + 2 * p[0] < d[0] * (k[0] - 1) + 1 or w + 2 * p[1] < d[1] * (k[1] - 1) + 1:
            continue
        if checked % 2:  # half of them as ints, as most code writes them
            k, s, p, d = k[0], s[0], p[0], d[0]
            w = max(w, d * (k - 1) + 1 - 2 * p)
            h = max(h, d * (k - 1) + 1 - 2 * p)
        real = tuple(make(k, s, p, d)(torch.zeros(1, 1, h, w)).shape[-2:])
        with because(f"conv2d_output_hw({h}, {w}, {k}, {s}, {p}, {d}) raised on a legal window"):
            got = cg.conv2d_output_hw(h, w, k, s, p, d)
        assert tuple(got) == real, (
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) returned {got}, "
            f"nn.{type(make(k, s, p, d)).__name__} with the same window gives {real}: pooling windows "
            "follow the same floor formula as convolutions"
        )
        checked += 1


@pytest.mark.task("ch06.2")
@pytest.mark.parametrize(
    "args",
    [
        (3, 3, 5, 1, 0, 1),
        (10, 10, 3, 1, 0, 5),
        (4, 9, (5, 3), 1, 0, 1),
        (9, 4, (3, 5), 1, 0, 1),
        (6, 6, 3, (1, 1), (0, 1), (3, 1)),
        (1, 7, 2, 1, 0, 1),
        (1, 9, 6, 1, 2, 1),
        (9, 1, (3, 6), 1, (0, 2), 1),
    ],
    ids=str,
)
def test_too_small_an_input_is_an_error(args):
    """A dilated kernel that does not fit the padded input, on either axis, raises ValueError."""
    with pytest.raises(ValueError):
        got = cg.conv2d_output_hw(*args)
        raise AssertionError(
            f"conv2d_output_hw{args} returned {got}, but the dilated kernel does not fit into the padded "
            "input on at least one axis (nn.Conv2d refuses it): raise ValueError instead of returning "
            "a size below 1"
        )


@pytest.mark.task("ch06.2")
@pytest.mark.parametrize(
    "args",
    [(5, 5, 5, 1, 0, 1), (1, 1, 3, 1, 1, 1), (9, 9, 3, 4, 0, 4), (5, 8, (3, 4), 2, (1, 0), (2, 2))],
    ids=str,
)
def test_a_kernel_that_just_fits_gives_one(args):
    """When the dilated kernel exactly fills the padded input the output is one pixel, not an error."""
    h, w, k, s, p, d = args
    real = tuple(nn.Conv2d(1, 1, k, s, p, d)(torch.zeros(1, 1, h, w)).shape[-2:])
    with because(
        f"conv2d_output_hw{args} raised, but the dilated kernel exactly fits the padded input "
        "(size + 2*padding == span): that is one window, not an error"
    ):
        got = cg.conv2d_output_hw(*args)
    assert tuple(got) == real, f"conv2d_output_hw{args} returned {got}, nn.Conv2d gives {real}"


# Every small (kernel, stride, padding, dilation): kernels 1-4, strides 1-3, padding 0-2,
# dilation 1-3, at the input sizes on both sides of the boundary (2 and 1 pixels too small,
# an exact fit) and at the smallest input, one pixel: 243 configurations, 99 of them too
# small. Each is given as ints (both axes) and each too small one also on one axis alone,
# beside one that fits on the other, so the check of each axis is reached by itself.
AXIS_SWEEP = sorted(
    {
        (size, k, s, p, d)
        for k in range(1, 5)
        for s in range(1, 4)
        for p in range(3)
        for d in range(1, 4)
        for size in (1, *(d * (k - 1) + 1 - 2 * p + off for off in (-2, -1, 0)))
        if size >= 1
    }
)


def axis_rule(size, k, s, p, d):
    """The docstring's rule on one axis: None when the padded input is smaller than the
    dilated kernel, else the number of windows."""
    span = d * (k - 1) + 1
    return None if size + 2 * p < span else (size + 2 * p - span) // s + 1


# (size, kernel, stride, padding, dilation) past what a float holds exactly (2**53): sizes,
# paddings and dilations are Python ints and the count is exact integer arithmetic, where a
# float division rounds the numerator. Each sits beside a 3-pixel axis, so every size and
# the bytes of a float32 tensor of that shape stay below 2**63 (torch's int64 shapes hold them)
HUGE_AXES = (
    (2**53 + 2, 1, 1, 0, 1),
    (2**53 + 6, 3, 2, 1, 2),
    (10**17 + 7, 3, 3, 1, 1),
    (2**59 + 3, 5, 7, 2, 3),
    (1, 3, 1, 2**58, 1),  # a huge padding around one pixel
    (5, 3, 1, 0, 2**61),  # a dilated kernel of 2**62 + 1 pixels: too small
)
SMALL_AXIS = (3, 3, 1, 0, 1)  # one window


def sweep_calls():
    """(args, expected) for every configuration of AXIS_SWEEP as ints, and for each too small
    one on the height and on the width alone; then each of HUGE_AXES beside SMALL_AXIS, on
    either axis; expected is None where ValueError is due."""
    fits = [a for a in AXIS_SWEEP if axis_rule(*a) is not None]
    calls = []
    for i, a in enumerate(AXIS_SWEEP):
        want = axis_rule(*a)
        calls.append(((a[0], a[0], *a[1:]), None if want is None else (want, want)))
        if want is None:
            other = fits[(5 * i) % len(fits)]
            calls.append(((a[0], other[0], *zip(a[1:], other[1:])), None))
            calls.append(((other[0], a[0], *zip(other[1:], a[1:])), None))
    for a in HUGE_AXES:
        for first, second in ((a, SMALL_AXIS), (SMALL_AXIS, a)):
            want = (axis_rule(*first), axis_rule(*second))
            args = (first[0], second[0], *zip(first[1:], second[1:]))
            calls.append((args, None if None in want else want))
    return calls


def too_small_axis(args):
    """Where the kernel of conv2d_output_hw(*args) does not fit, in words."""
    h, w, *rest = args
    for axis, size, i in (("height", h, 0), ("width", w, 1)):
        k, s, p, d = (v if isinstance(v, int) else v[i] for v in rest)
        if axis_rule(size, k, s, p, d) is None:
            return f" (on the {axis}, {size} + 2*{p} < the dilated kernel's {d * (k - 1) + 1})"
    return ""


@probe
def output_sizes_or_refusals(calls):
    """conv2d_output_hw(*args) for each args in ``calls``: ("returned", its result, the
    module-qualified type name of each of its items, None for a result that is no tuple or
    list) or ("ValueError", the error's text, None). The names are read here, since the
    wire turns a numpy integer into an int."""
    seen = []
    for args in calls:
        try:
            got = cg.conv2d_output_hw(*args)
        except ValueError as err:
            seen.append(("ValueError", str(err), None))
            continue
        kinds = None
        if isinstance(got, (tuple, list)):
            kinds = [f"{type(v).__module__}.{type(v).__qualname__}" for v in got]
        seen.append(("returned", got, kinds))
    return seen


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
def test_every_small_configuration_follows_the_rule():
    """On every small configuration, as ints and on either axis alone, and on sizes, paddings and dilations past 2**53, conv2d_output_hw raises ValueError exactly when the padded input is smaller than the dilated kernel, and otherwise returns nn.Conv2d's size as two Python ints."""
    calls = sweep_calls()
    with because(
        f"conv2d_output_hw raised something other than ValueError on one of {len(calls)} small "
        "configurations (kernels 1-4, strides 1-3, padding 0-2, dilation 1-3, sizes at the "
        "edge of fitting)"
    ):
        seen = output_sizes_or_refusals([args for args, _ in calls])
    wrong = {"returned": [], "refused": [], "size": [], "huge": [], "type": []}
    for (args, want), (kind, got, kinds) in zip(calls, seen):
        shown = f"conv2d_output_hw{args}"
        if kind == "returned" and want is not None and kinds is not None:
            if kinds != ["builtins.int", "builtins.int"]:
                wrong["type"].append(f"{shown} returned {got!r} as items of type {kinds}")
        huge = max(v for a in args for v in (a if isinstance(a, tuple) else (a,))) > 2**50
        if huge:
            if want is None:
                ok = kind == "ValueError"
            else:
                ok = kind == "returned" and isinstance(got, (tuple, list)) and tuple(got) == want
            if not ok:
                wrong["huge"].append(
                    f"{shown} {'returned ' + repr(got) if kind == 'returned' else 'raised ' + kind}"
                    f", nn.Conv2d's rule gives {'ValueError' if want is None else want}"
                )
        elif want is None and kind == "returned":
            wrong["returned"].append(f"{shown} returned {got!r}{too_small_axis(args)}")
        elif want is not None and kind != "returned":
            wrong["refused"].append(f"{shown} raised ValueError ({got}), nn.Conv2d gives {want}")
        elif want is not None and not (isinstance(got, (tuple, list)) and tuple(got) == want):
            wrong["size"].append(f"{shown} returned {got!r}, nn.Conv2d gives {want}")
    found = [
        f"{len(wrong['returned'])} too-small configurations gave a size instead of ValueError, "
        f"e.g. {'; '.join(wrong['returned'][:3])}. The dilated kernel spans "
        "dilation*(kernel-1)+1 pixels; when size + 2*padding is below that on either axis there "
        "is no window at all. Decide that from the sizes before counting windows: a count "
        "rounded toward zero (int(a / b)) turns a small negative numerator into 0 and so one "
        "window, and a check of one axis or of a count below 0 lets the other cases through"
        if wrong["returned"]
        else "",
        f"{len(wrong['refused'])} configurations that nn.Conv2d accepts raised ValueError, e.g. "
        f"{'; '.join(wrong['refused'][:3])}: a kernel fits when size + 2*padding >= "
        "dilation*(kernel-1)+1 (padding counts on both sides, and may exceed half the kernel)"
        if wrong["refused"]
        else "",
        f"{len(wrong['size'])} sizes differ from nn.Conv2d's, e.g. {'; '.join(wrong['size'][:3])}: "
        "out = (size + 2*padding - dilation*(kernel-1) - 1) // stride + 1 on each axis"
        if wrong["size"]
        else "",
        f"{len(wrong['huge'])} configurations with sizes, paddings or dilations past 2**53 "
        f"went wrong, e.g. {'; '.join(wrong['huge'][:2])}: the arguments are Python ints of any "
        "size and the rule is exact integer arithmetic (//); a float division (a / b, then "
        "math.floor, math.ceil or int) rounds a numerator past 2**53"
        if wrong["huge"]
        else "",
        f"{len(wrong['type'])} results held sizes that are not Python ints, e.g. "
        f"{wrong['type'][0]}: the reading asks for (out_h, out_w) as Python ints. Arithmetic "
        "on numpy values (arrays, numpy scalars, np.floor_divide) gives numpy integers, which "
        "compare equal to ints but are no int (isinstance(v, int) is False, json refuses "
        "them): keep the count in Python ints"
        if wrong["type"]
        else "",
    ]
    assert not any(found), " | ".join(f for f in found if f)


# ---------------------------------------------------------------- ch06.3


def derived_hw(hw):
    h, w = hw
    for k, p in ((5, 0), (2, 0), (3, 1), (2, 0)):  # conv5, pool2, conv3 (padding 1), pool2
        s = 2 if k == 2 else 1
        h, w = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    return h, w


@pytest.mark.task("ch06.3")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "c, n, hw, batch",
    [
        (1, 2, (8, 8), 6),
        (3, 7, (31, 12), 6),
        (2, 4, (64, 48), 0),  # a batch of no images: B is any size, 0 included
        (1, 3, (13, 13), 1),
        (4, 5, (9, 41), 3),
    ],
    ids=str,
)
def test_head_is_derived_for_other_sizes(c, n, hw, batch):
    """The head fits the features for other channels, classes and (odd, non-square) sizes, on batches of any size (no images included)."""
    with because(
        f"SmallCNN({c}, {n}, input_hw={hw}) cannot run a batch of {batch} such images: the "
        "head's in_features must be derived from input_hw through every conv and pool"
        + (
            "; and a batch of no images (B = 0) is a batch: x.reshape(x.size(0), -1) or "
            "view(B, -1) cannot size the -1 from no elements, flatten(1) keeps the batch axis"
            if batch == 0
            else ""
        )
    ):
        seen = cnn_forward(c, n, hw, batch, singles=(0, batch - 1) if batch else ())
    out = seen["out"]
    assert tuple(out.shape) == (batch, n), (
        f"SmallCNN({c}, {n}, input_hw={hw}) returned shape {tuple(out.shape)} for {batch} images, expected "
        f"({batch}, {n}): flatten each image on its own (flatten(1)); a view(-1, K) with the wrong K "
        "changes the batch size"
    )
    h, w = derived_hw(hw)
    assert tuple(seen["head_weight"].shape) == (n, 16 * h * w), (
        f"for {hw} inputs the features hold 16 x {h} x {w} = {16 * h * w} numbers per image, so the "
        f"head must be a Linear({16 * h * w}, {n}); its weight is {tuple(seen['head_weight'].shape)}"
    )
    for i, alone in seen["alone"].items():
        judge.close(
            out[i],
            alone[0],
            "each image's logits must depend on that image alone, whatever else is in the batch",
            atol=1e-5,
            rtol=1e-5,
        )


CONV_FIELDS = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation")


@pytest.mark.task("ch06.3")
@pytest.mark.parametrize("c, n, hw", [(3, 10, (28, 28)), (5, 2, (20, 32))], ids=str)
def test_model_follows_the_documented_architecture(c, n, hw):
    """features is conv5(8) -> ReLU -> maxpool2 -> conv3(16, padding 1) -> ReLU -> maxpool2; head a Linear."""
    with because(f"SmallCNN({c}, {n}, {hw}) could not be built and inspected"):
        built = cnn_built(c, n, hw)
    kinds = [layer["kind"] for layer in built["features"]]
    assert built["sequential"] and kinds == [
        "Conv2d",
        "ReLU",
        "MaxPool2d",
        "Conv2d",
        "ReLU",
        "MaxPool2d",
    ], (
        f"SmallCNN.features should be an nn.Sequential of conv5, ReLU, maxpool2, conv3, ReLU, maxpool2; got {kinds}"
    )
    conv1, pool1, conv2, pool2 = (built["features"][i] for i in (0, 2, 3, 5))
    want1 = dict(in_channels=c, out_channels=8, kernel_size=(5, 5), stride=(1, 1), padding=(0, 0))
    want2 = dict(in_channels=8, out_channels=16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
    if conv2.get("padding") == "same":  # the same one pixel on each side for a 3x3 kernel
        conv2 = {**conv2, "padding": (1, 1)}
    for got, want, name in ((conv1, want1, "first"), (conv2, want2, "second")):
        seen = {k: got.get(k) for k in want}
        assert seen == want and got.get("dilation") == (1, 1), (
            f"the {name} convolution is {seen}, expected {want}"
        )
    for pool in (pool1, pool2):
        assert pool.get("kernel_size") in (2, (2, 2)) and pool.get("stride") in (2, (2, 2)), (
            f"each pool is a 2x2 max pool with stride 2; got {pool}"
        )
    h, w = derived_hw(hw)
    head = built["head"]
    assert built["head_is_linear"] and (head.get("in_features"), head.get("out_features")) == (
        16 * h * w,
        n,
    ), (
        f"on {hw} the features are 16 x {h} x {w}, so the head is an nn.Linear({16 * h * w}, {n}); "
        f"got {head}"
    )
    assert not built["lazy"], (
        "every parameter must exist at construction (no lazy layers), with the shape input_hw implies"
    )


@probe
def cnn_on_another_size(in_channels, n_classes, hw, batch, other_hw, seed=6):
    """SmallCNN(in_channels, n_classes, hw) run on ``batch`` images of size ``other_hw``:
    the logits' shape, or the name of the exception forward raised."""
    torch.manual_seed(seed)
    model = cg.SmallCNN(in_channels, n_classes, hw)
    x = torch.randn(batch, in_channels, *other_hw, generator=torch.Generator().manual_seed(seed))
    try:
        return {"shape": tuple(model(x).shape)}
    except Exception as e:  # noqa: BLE001 - raising is the expected outcome here
        return {"raised": type(e).__name__}


@probe
def cnn_in_dtypes(in_channels, n_classes, hw, batch, dtypes, seed=5):
    """SmallCNN (seeded) moved by .to(dtype) for each dtype name, on a seeded batch of that
    dtype: its logits (or the exception forward raised), its features and its head."""
    seen = {}
    for name in dtypes:
        dtype = getattr(torch, name)
        torch.manual_seed(seed)
        model = cg.SmallCNN(in_channels, n_classes, hw).to(dtype)
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(batch, in_channels, *hw, generator=g).to(dtype)
        try:
            out = model(x)
        except Exception as e:  # noqa: BLE001 - which error, and where, is the point
            out = last_line(e)
        seen[name] = {
            "out": out,
            "features": model.features(x),
            "head": (model.head.weight, model.head.bias),
        }
    return seen


@pytest.mark.task("ch06.3")
def test_forward_is_the_head_of_the_flattened_features():
    """forward(x) == head(features(x).flatten(1)): one flat row per image, never a row cut across images."""
    with because("SmallCNN(2, 3, (16, 20)) failed on a batch of 5"):
        seen = cnn_forward(2, 3, (16, 20), 5)
    feats = seen["features"]
    want = feats.flatten(1) @ seen["head_weight"].T + seen["head_bias"]
    judge.close(
        seen["out"],
        want,
        "forward must apply the head to each image's features flattened in their (C, H, W) order "
        f"(flatten(1)): {first_difference(seen['out'], want)}",
        atol=1e-5,
        rtol=1e-5,
    )
    # 28x28 gives 16 x 6 x 6 = 576 features per image: these sizes give 2x, 1/2x and 3/2x that,
    # so a flatten to rows of 576 (view or reshape(-1, K)) runs and regroups the numbers
    for other_hw, batch, per_image in (
        ((28, 52), 1, "1152"),
        ((28, 16), 2, "288"),
        ((28, 40), 2, "864"),
    ):
        seen = cnn_on_another_size(3, 10, (28, 28), batch, other_hw)
        assert "raised" in seen, (
            f"SmallCNN(3, 10, input_hw=(28, 28)) on {batch} image(s) of {other_hw} (each {per_image} "
            f"features where the head takes 576) returned logits of shape {seen.get('shape')}: "
            f"head(features(x).flatten(1)) cannot take those rows and raises; a flatten to rows "
            "of in_features (view/reshape(-1, K)) cuts or joins images and changes the batch size "
            "silently — flatten each image on its own (flatten(1))"
        )
    # the composition holds in whatever dtype the model was moved to: float64 and half too
    tolerance = {"float64": 1e-9, "float16": 2e-2}
    for name, seen in cnn_in_dtypes(2, 3, (14, 11), 3, list(tolerance)).items():
        what = f"SmallCNN(2, 3, (14, 11)).to(torch.{name}) on a {name} batch of 3"
        out = seen["out"]
        assert not isinstance(out, str), (
            f"{what} raised {out}: forward is head(features(x).flatten(1)), so it runs in the "
            "dtype the model and its input were moved to; converting x or the features to "
            "one fixed dtype inside forward breaks a .double() or .half() model"
        )
        assert out.dtype == getattr(torch, name), (
            f"{what} returned {out.dtype} logits: head(features(x).flatten(1)) keeps the "
            "model's dtype; a conversion to one fixed dtype inside forward changes it"
        )
        weight, bias = seen["head"]
        feats = seen["features"].flatten(1).double()
        want = feats @ weight.double().T + bias.double()
        judge.close(
            out.double(),
            want,
            f"{what}: the logits are not the head of the flattened features computed in "
            f"{name} ({first_difference(out.double(), want, atol=tolerance[name])}): no "
            "conversion to another dtype belongs between the layers",
            atol=tolerance[name],
            rtol=tolerance[name],
        )


@probe
def cnn_gradients(in_channels, n_classes, hw, seed):
    """Which of SmallCNN's parameters receive no gradient (None or all zero) from its logits."""
    torch.manual_seed(seed)
    model = cg.SmallCNN(in_channels, n_classes, hw)
    x = torch.randn(4, in_channels, *hw, generator=torch.Generator().manual_seed(seed))
    model(x).square().sum().backward()
    return {
        "names": [n for n, _ in model.named_parameters()],
        "dead": [
            n
            for n, p in model.named_parameters()
            if p.grad is None or not bool((p.grad != 0).any())
        ],
    }


@pytest.mark.task("ch06.3")
def test_every_parameter_learns():
    """The logits' gradient reaches every parameter of features and head."""
    with because("SmallCNN(3, 4, (24, 24)) could not run forward and backward"):
        seen = cnn_gradients(3, 4, (24, 24), seed=63)
    assert seen["names"] and not seen["dead"], (
        f"parameters {seen['dead']} of {seen['names']} get no gradient from the logits: nothing "
        "between the input and the head may be detached"
    )


# ---------------------------------------------------------------- ch06.4

STACKS = {
    "strided-convs": [
        ("conv", 1, 2, 3, 2, 0, 1),
        ("relu",),
        ("conv", 2, 2, 3, 2, 0, 1),
        ("conv", 2, 1, 3, 1, 0, 1),
    ],
    "dilated": [("conv", 2, 3, 3, 1, 0, 2), ("relu",), ("conv", 3, 1, 3, 1, 0, 3)],
    "pools": [
        ("conv", 1, 2, 3, 1, 1, 1),
        ("maxpool", 3, 2, 0, 1),
        ("conv", 2, 2, 3, 1, 0, 1),
        ("avgpool", 2, None, 0),
    ],
    "non-square": [
        ("conv", 1, 2, (1, 5), 1, 0, 1),
        ("maxpool", (2, 1), None, 0, 1),
        ("conv", 2, 1, (3, 3), (1, 2), 0, 1),
        ("conv", 1, 1, 3, 1, 0, 1),
    ],
    "smallcnn-like": [
        ("conv", 3, 8, 5, 1, 0, 1),
        ("relu",),
        ("maxpool", 2, None, 0, 1),
        ("conv", 8, 16, 3, 1, 1, 1),
        ("bn", 16),
        ("relu",),
        ("maxpool", 2, None, 0, 1),
        ("conv", 16, 4, 3, 1, 0, 1),
    ],
    "dilated-maxpool": [
        ("conv", 1, 1, 3, 1, 0, 1),
        ("maxpool", 3, 1, 0, 2),
        ("conv", 1, 1, 3, 1, 0, 1),
    ],
    "strided-1x1": [("conv", 1, 1, 1, 2, 0, 1), ("dropout",), ("conv", 1, 1, 3, 1, 0, 1)],
    "dilation-pairs": [
        ("conv", 1, 1, (3, 2), (2, 1), (1, 0), (1, 3)),
        ("identity",),
        ("avgpool", (1, 3), (3, 1), 0),
        ("conv", 1, 1, 2, 1, 0, (2, 1)),
    ],
}


@pytest.mark.task("ch06.4")
@pytest.mark.points(2)
@pytest.mark.parametrize("name", list(STACKS))
def test_receptive_field_equals_backprop_measurement(name):
    """receptive_field equals the input window a backpropagated gradient reaches."""
    specs = STACKS[name]
    got = rf_checked(specs, container="sequential")
    rows, cols, _ = measured_receptive_field(specs)
    assert tuple(got) == (rows, cols), (
        f"for a stack of {len(specs)} layers receptive_field returned {got}, but the gradient of one output "
        f"pixel reaches a {rows}x{cols} input window: each conv or pool adds (k-1)*dilation times the "
        "product of the strides (jump) of the layers before it, on each axis; pooling layers count "
        "(max pools with their dilation), pointwise ones do not"
    )


def random_stack(rng):
    specs = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(["conv", "conv", "maxpool", "avgpool", "relu", "bn"])

        def pick(lo, hi):
            return (
                (rng.randint(lo, hi), rng.randint(lo, hi))
                if rng.random() < 0.3
                else rng.randint(lo, hi)
            )

        k, s = pick(1, 4), pick(1, 3)
        if kind == "conv":
            specs.append(("conv", 1, 1, k, s, pick(0, 1), pick(1, 3)))
        elif kind == "maxpool":
            specs.append(("maxpool", k, rng.choice([None, s]), 0, pick(1, 2)))
        elif kind == "avgpool":
            specs.append(("avgpool", k, rng.choice([None, s]), 0))
        elif kind == "bn":
            specs.append(("bn", 1))
        else:
            specs.append(("relu",))
    return specs


@pytest.mark.task("ch06.4")
def test_receptive_field_of_random_stacks():
    """receptive_field equals the backprop measurement on random stacks, whatever container holds them."""
    rng = random.Random(64)
    for trial in range(30):
        specs = random_stack(rng)
        container = ("list", "sequential", "tuple")[trial % 3]
        got = rf_checked(specs, container=container)
        rows, cols, _ = measured_receptive_field(specs, size=16)
        assert tuple(got) == (rows, cols), (
            f"receptive_field of {specs} (as a {container}) returned {brief(got)}, but the gradient of "
            f"one output pixel reaches a {rows}x{cols} input window: r += (k-1)*dilation*jump, then "
            "jump *= stride, per axis, for every conv and pool (a pool's stride defaults to its kernel)"
        )


@probe
def receptive_field_of_an_iterator(specs):
    """receptive_field of the layers ``specs`` describes, handed over as a generator that
    yields each layer once (the signature takes any Iterable[nn.Module])."""
    layers = [build_layer(s) for s in specs]
    return cg.receptive_field(layer for layer in layers)


@pytest.mark.task("ch06.4")
def test_receptive_field_of_a_one_shot_iterable():
    """A generator of layers, which can be walked only once, gives the same window as a list."""
    for specs in (STACKS["non-square"], STACKS["dilation-pairs"], [("conv", 1, 1, 3, 1, 0, 1)]):
        with because(
            f"receptive_field raised on {len(specs)} layers handed over as a generator: the "
            "signature takes any Iterable[nn.Module], and a generator can be walked only once"
        ):
            got = receptive_field_of_an_iterator(specs)
        want = receptive_field_of(specs, "list")
        assert tuple(got) == tuple(want), (
            f"receptive_field of {len(specs)} layers returned {brief(got)} when they came as a "
            f"generator and {brief(want)} as a list: the signature takes any Iterable[nn.Module], "
            "and a generator is exhausted after one pass, so a second loop over `layers` (one "
            "per axis, say) sees no layer at all. Walk the layers once, updating both axes in "
            "the same pass (or make a list of them first)"
        )


@pytest.mark.task("ch06.4")
@pytest.mark.parametrize("container", ["list", "sequential"])
def test_receptive_field_of_pointwise_layers_is_one_pixel(container):
    """Pointwise layers, 1x1 convolutions and an empty stack see a single input pixel."""
    for specs in ([("relu",), ("conv", 2, 2, 1, 1, 0, 1), ("bn", 2), ("dropout",)], []):
        got = rf_checked(specs, container=container)
        assert tuple(got) == (1, 1), (
            f"pointwise layers and 1x1 convolutions see a single input pixel, so does no layer at "
            f"all; receptive_field({specs}) returned {got}"
        )


# ---------------------------------------------------------------- ch06.5


@pytest.mark.task("ch06.5")
@pytest.mark.parametrize(
    "image_shape, out_channels, kernel_size, batch",
    [
        ((4, 7, 6), 3, 2, 1),  # H < W, six channels of height 4, one image: sizes mislead
        ((9, 6, 4), 2, 5, 3),  # H > W, a 5x5 kernel: features 5 x 2
        ((3, 7, 3), 5, 3, 2),  # H == C: the unmoved batch runs, with H and W exchanged
        ((6, 6, 6), 5, 1, 2),  # H == W == C and a 1x1 kernel: every wrong move runs
        ((9, 4, 1), 2, 3, 2),  # one channel: a reshape is right here, the reported "9" is not
    ],
    ids=str,
)
def test_nhwc_conv_equals_the_conv_over_h_and_w(image_shape, out_channels, kernel_size, batch):
    """ChannelsLastConv builds nn.Conv2d(C, out_channels, kernel_size) from its arguments, and its features are that conv over H and W of the batch moved to [B, C, H, W]."""
    seen = nhwc_conv_checked(image_shape, out_channels, kernel_size, batch, seed=sum(image_shape))
    problem = nhwc_conv_problem(image_shape, out_channels, kernel_size, seen)
    assert problem is None, problem
    problem = built_as_asked(image_shape, out_channels, kernel_size, seen)
    assert problem is None, problem


def built_as_asked(image_shape, out_channels, kernel_size, seen) -> str | None:
    """What about the conv ``seen`` (from nhwc_conv_run) or its features does not follow the
    constructor's arguments, or None: weight [out_channels, C, k, k], features
    [B, out_channels, H - k + 1, W - k + 1]."""
    h, w, c = image_shape
    call = f"ChannelsLastConv({image_shape}, {out_channels}, kernel_size={kernel_size})"
    weight, out = tuple(seen["weight"].shape), tuple(seen["out"].shape)
    want_weight = (out_channels, c, kernel_size, kernel_size)
    if weight != want_weight:
        return (
            f"{call}.conv has a weight of shape {list(weight)}, expected {list(want_weight)} = "
            "[out_channels, C, kernel_size, kernel_size]: build nn.Conv2d(C, out_channels, "
            "kernel_size) from the arguments the model was given, not from fixed numbers "
            "(a default only applies when the caller leaves the argument out)"
        )
    want_out = (seen["x"].shape[0], out_channels, h - kernel_size + 1, w - kernel_size + 1)
    if out != want_out:
        return (
            f"{call} on a [B, H, W, C] = {list(seen['x'].shape)} batch returned features of "
            f"shape {list(out)}, expected {list(want_out)} = "
            "[B, out_channels, H - kernel_size + 1, W - kernel_size + 1]"
        )
    return None


@pytest.mark.task("ch06.5")
def test_nhwc_conv_parameters_are_its_convs():
    """The model's parameters are its conv's, nn.Conv2d(C, out_channels, 3) by default."""
    with because("ChannelsLastConv((7, 5, 2), 6) could not be built and inspected"):
        built = nhwc_conv_built((7, 5, 2), 6)
    want = {"conv.weight": (6, 2, 3, 3), "conv.bias": (6,)}
    assert built["conv_is_conv2d"] and built["params"] == want, (
        f"ChannelsLastConv((7, 5, 2), 6) for images of (H, W, C) = (7, 5, 2) has parameters "
        f"{built['params']}, expected {want}: one nn.Conv2d(C, out_channels, kernel_size=3) whose "
        "in_channels is the images' C (the last entry of image_shape), not their height"
    )


@pytest.mark.task("ch06.5")
def test_nhwc_conv_on_a_cropped_batch():
    """The features are right also when the batch is a crop (a non-contiguous view) of a larger one."""
    seen = nhwc_conv_checked((5, 6, 3), 2, 3, batch=2, seed=68, layout="crop")
    problem = nhwc_conv_problem((5, 6, 3), 2, 3, seen)
    assert problem is None, problem


# ------------------------------------- subclasses, shared layers and other memory layouts


@probe
def receptive_field_arranged(specs, order, kinds, container):
    """receptive_field of the layers ``specs`` describes, the i-th built once and placed at
    every position of ``order`` that holds i (one object applied several times), given as a
    ``container`` (list, tuple or sequential). ``kinds[i]`` turns layer i into an instance of
    a plain subclass of its class ("subclass") or, for a conv, wraps it with
    nn.utils.parametrizations.weight_norm, whose class is then ParametrizedConv2d
    ("weight_norm"); "plain" leaves it."""
    built = []
    for spec, kind in zip(specs, kinds):
        layer = build_layer(spec)
        if kind == "weight_norm" and isinstance(layer, nn.Conv2d):
            layer = nn.utils.parametrizations.weight_norm(layer)
        elif kind != "plain":
            cls = type(layer)
            layer.__class__ = type(f"My{cls.__name__}", (cls,), {})  # same state, a subclass
        built.append(layer)
    layers = [built[i] for i in order]
    if container == "sequential":
        layers = nn.Sequential(*layers)
    elif container == "tuple":
        layers = tuple(layers)
    return {"rf": cg.receptive_field(layers), "classes": [type(m).__name__ for m in built]}


GEOMETRIC = ("conv", "maxpool", "avgpool")


@pytest.mark.task("ch06.4")
def test_receptive_field_counts_subclassed_and_parametrized_layers():
    """Subclasses of Conv2d, MaxPool2d and AvgPool2d (a weight-normed conv among them) change
    the geometry as the layers they extend do."""
    rng = random.Random(65)
    for trial in range(12):
        specs = random_stack(rng) + [("conv", 1, 1, 3, 1, 0, 1)]  # at least one geometric layer
        kinds = [("subclass", "weight_norm")[(trial + i) % 2] for i in range(len(specs))]
        container = ("list", "sequential", "tuple")[trial % 3]
        with because(
            f"receptive_field raised on subclassed and weight-normed layers of {specs}: read "
            "kernel_size, stride and dilation as attributes of any layer that isinstance() "
            "recognises"
        ):
            seen = receptive_field_arranged(specs, list(range(len(specs))), kinds, container)
        rows, cols, _ = measured_receptive_field(specs, size=16)
        assert tuple(seen["rf"]) == (rows, cols), (
            f"receptive_field of {specs} (as a {container}), the layers being instances of "
            f"{seen['classes']}, returned {brief(seen['rf'])}; the same layers of the plain classes "
            f"see {rows}x{cols} input pixels. A subclass of nn.Conv2d (such as the "
            "ParametrizedConv2d that nn.utils.parametrizations.weight_norm makes) is a Conv2d: "
            "recognise layers with isinstance(layer, (nn.Conv2d, ...)), not type(layer) is/in"
        )


@pytest.mark.task("ch06.4")
def test_receptive_field_counts_a_layer_applied_twice():
    """A layer object placed at several positions of the stack counts at each of them."""
    rng = random.Random(66)
    for trial in range(8):
        specs = random_stack(rng) + [("conv", 1, 1, 3, 1, 0, 1)]
        n = len(specs)
        again = rng.choice([i for i in range(n) if specs[i][0] in GEOMETRIC])
        order = [*range(n), n - 1, again]  # the last conv and one other layer, applied again
        container = ("list", "sequential", "tuple")[trial % 3]
        with because(f"receptive_field raised on {container} of layers {order} of {specs}"):
            seen = receptive_field_arranged(specs, order, ["plain"] * n, container)
        rows, cols, _ = measured_receptive_field([specs[i] for i in order], size=16)
        assert tuple(seen["rf"]) == (rows, cols), (
            f"receptive_field of the layers {order} (indices into {specs}, the same object "
            f"wherever an index repeats; as a {container}) returned {brief(seen['rf'])}, but "
            f"applying them in order makes one output pixel see {rows}x{cols} input pixels: walk "
            "the layers as given (for layer in layers); .modules() and .children() of a "
            "Sequential yield each object only once"
        )


@probe
def cnn_in_layouts(in_channels, n_classes, hw, batches, layouts, seed=7):
    """One SmallCNN (seeded), run on seeded batches of each size in ``batches`` in turn, each
    batch rebuilt in every layout of ``layouts`` (those of harness.layouts, and "nhwc": an
    image batch stored [B, H, W, C] and permuted to [B, C, H, W]): the logits per batch size
    and layout."""
    torch.manual_seed(seed)
    model = cg.SmallCNN(in_channels, n_classes, hw)
    g = torch.Generator().manual_seed(seed)
    seen = {}
    with torch.no_grad():
        for b in batches:
            x = torch.randn(b, in_channels, *hw, generator=g)
            for layout in layouts:
                laid = (
                    x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
                    if layout == "nhwc"
                    else laid_out(x, layout)
                )
                seen[f"{b}/{layout}"] = model(laid)
    return seen


IMAGE_LAYOUTS = ["channels_last", "nhwc", "strided"]


@pytest.mark.task("ch06.3")
def test_the_model_reads_images_in_any_memory_layout():
    """The same images stored channels-last, permuted from NHWC or strided
    give the same logits as a contiguous batch, batch after batch."""
    c, n, hw = 3, 4, (14, 18)
    with because(
        f"SmallCNN({c}, {n}, input_hw={hw}) raised on a batch in another memory layout (a "
        "channels_last batch, an NHWC batch permuted to NCHW, a slice): a conv on such a batch "
        "returns features in that layout, and .view needs contiguous memory; flatten(1) or "
        "reshape work on any layout"
    ):
        seen = cnn_in_layouts(c, n, hw, (3, 1), ["contiguous", *IMAGE_LAYOUTS])
    for b in (3, 1):
        base = seen[f"{b}/contiguous"]
        assert tuple(base.shape) == (b, n), (
            f"SmallCNN({c}, {n}, input_hw={hw}) returned {brief(base)} for {b} images, expected "
            f"[{b}, {n}]"
        )
        for layout in IMAGE_LAYOUTS:
            got = seen[f"{b}/{layout}"]
            assert judge.is_close(got, base, atol=1e-5, rtol=1e-4), (
                f"SmallCNN({c}, {n}, input_hw={hw}) gave other logits for the same {b} images "
                f"stored {layout} than stored contiguously "
                f"({first_difference(got, base, atol=1e-5, rtol=1e-4)}): a tensor's values do "
                "not depend on its strides; flatten each image with flatten(1), which reads "
                "them in [C, H, W] order whatever the memory layout"
            )


@probe
def nhwc_conv_in_layouts(
    image_shape, out_channels, kernel_size, batches, layouts, seed=8, dtype="float32"
):
    """One ChannelsLastConv (seeded) moved with .to(dtype), run on seeded [B, H, W, C]
    batches of that dtype of each size in ``batches`` in turn, each rebuilt in every layout
    of ``layouts`` (harness.layouts): the features per batch size and layout, each batch
    ("x/B") and the conv's weight and bias."""
    h, w, c = image_shape
    torch.manual_seed(seed)
    model = cg.ChannelsLastConv(image_shape, out_channels, kernel_size).to(getattr(torch, dtype))
    g = torch.Generator().manual_seed(seed)
    seen = {"weight": model.conv.weight.detach().clone(), "bias": model.conv.bias.detach().clone()}
    with torch.no_grad():
        for b in batches:
            x = torch.randn(b, h, w, c, generator=g).to(getattr(torch, dtype))
            seen[f"x/{b}"] = x.clone()
            for layout in layouts:
                seen[f"{b}/{layout}"] = model(laid_out(x, layout))
    return seen


@pytest.mark.task("ch06.5")
def test_nhwc_conv_reads_a_batch_in_any_memory_layout():
    """A [B, H, W, C] batch stored transposed, strided, offset or in channels_last memory gives
    the features of the contiguous batch, batch after batch, for a model and batch moved to
    float64: its conv over H and W of the batch moved to [B, C, H, W], in float64."""
    shape, out_channels, k = (6, 5, 3), 2, 3
    layouts = ["channels_last", "transposed", "strided", "offset"]
    call = f"ChannelsLastConv({shape}, {out_channels}, {k}).double()"
    with because(
        f"{call} raised on a float64 [B, H, W, C] batch, contiguous or in another memory "
        "layout: the batch has the dtype of the model (no .float() or other fixed dtype: the "
        "conv's weight is float64 here), and .view needs contiguous memory; permute works on "
        "any layout"
    ):
        seen = nhwc_conv_in_layouts(
            shape, out_channels, k, (2, 3), ["contiguous", *layouts], dtype="float64"
        )
    for b in (2, 3):
        base = seen[f"{b}/contiguous"]
        want = [b, out_channels, shape[0] - k + 1, shape[1] - k + 1]
        assert list(base.shape) == want, (
            f"{call} on a contiguous [B, H, W, C] = "
            f"{[b, *shape]} batch returned features of shape {list(base.shape)}, expected "
            f"[B, out_channels, H - k + 1, W - k + 1] = {want}: the kernel slides over H and W "
            "once the channel axis is moved to dimension 1 (permute(0, 3, 1, 2))"
        )
        expected = F.conv2d(seen[f"x/{b}"].permute(0, 3, 1, 2), seen["weight"], seen["bias"])
        judge.close(
            base,
            expected,
            f"{call} on a float64 [B, H, W, C] = {[b, *shape]} batch: its features are not its "
            "conv over H and W of the batch moved to [B, C, H, W] in float64 (a float64 model "
            "computes in float64; a conversion to one fixed dtype, .float() say, rounds or "
            "changes the dtype)",
            atol=1e-12,
            rtol=1e-12,
            dtype=torch.float64,
        )
        for layout in layouts:
            got = seen[f"{b}/{layout}"]
            assert judge.is_close(got, base, atol=1e-12, rtol=1e-12), (
                f"{call} gave other features for the "
                f"same {b} images stored {layout} than stored contiguously "
                f"({first_difference(got, base, atol=1e-12, rtol=1e-12)}): move the channel axis "
                "with permute(0, 3, 1, 2), which follows the strides, never by relabelling "
                "memory (view, as_strided)"
            )


# ------------------------------------------------ another device: results stay on it


@probe
def run_on_meta(which, cases):
    """to_channels_first on meta batches [B, H, W, C] of ``cases`` (B, H, W, C, dtype name), or
    SmallCNN(C, n, (H, W)) moved to meta run on a meta batch [B, C, H, W] for ``cases``
    (B, C, n, H, W): the meta device holds no values, like a GPU you don't have. Per case the
    result's device, dtype and shape, or what was raised."""
    meta = torch.device("meta")
    seen = []
    for case in cases:
        if which == "to_channels_first":
            b, h, w, c, dtype = case
            x = torch.zeros(b, h, w, c, dtype=getattr(torch, dtype), device=meta)
            outcome, out = devices.on_meta(cg.to_channels_first, x)
        else:
            b, c, n, h, w = case
            model = cg.SmallCNN(c, n, (h, w)).to(meta)  # built on the CPU, moved, then watched
            outcome, out = devices.on_meta(model, torch.zeros(b, c, h, w, device=meta))
        if outcome == devices.NEEDS_VALUES:  # it reads values: right on a GPU, not on meta
            seen.append({"cannot tell": out})
            continue
        if outcome != "returned":
            seen.append({"raised": out if outcome == "raised" else f"mixed devices: {out}"})
            continue
        if not isinstance(out, torch.Tensor):
            seen.append({"raised": f"returned {type(out).__name__}"})
        else:
            seen.append({"device": str(out.device), "dtype": out.dtype, "shape": tuple(out.shape)})
    return seen


def meta_problems(what, cases, seen, wants):
    """'call: observed, expected' for each case whose result is not (meta, dtype, shape)."""
    wrong = []
    for case, got, (dtype, shape) in zip(cases, seen, wants):
        if "cannot tell" in got:
            continue
        if "raised" in got:
            wrong.append(f"{what}{case} raised {got['raised']}")
        elif (got["device"], got["dtype"], got["shape"]) != ("meta", dtype, shape):
            wrong.append(
                f"{what}{case} gave {got['dtype']} {list(got['shape'])} on {got['device']}, "
                f"expected {dtype} {list(shape)} on meta"
            )
    return wrong


@pytest.mark.task("ch06.1")
def test_channels_first_stays_on_the_batchs_device():
    """to_channels_first of a batch on another device (meta) returns there, same dtype, [B, C, H, W]."""
    cases = [(2, 5, 6, 3, "float32"), (1, 3, 3, 1, "uint8"), (0, 2, 4, 3, "float16")]
    seen = run_on_meta("to_channels_first", cases)
    wants = [(getattr(torch, d), (b, c, h, w)) for b, h, w, c, d in cases]
    wrong = meta_problems("to_channels_first on meta (B, H, W, C, dtype) = ", cases, seen, wants)
    x = torch.arange(2 * 5 * 6 * 3).reshape(2, 5, 6, 3)  # the same batch on the CPU, with values
    got = cg.to_channels_first(x)
    if not judge.is_equal(got, x.permute(0, 3, 1, 2)):
        wrong.append(
            f"to_channels_first(arange batch [2, 5, 6, 3]) on the CPU is not out[b, c, h, w] == "
            f"x[b, h, w, c] ({brief(got)})"
        )
    assert not wrong, (
        f"{wrong[:3]}: a batch on a GPU (meta stands for one here) must come back on it: "
        "permute or movedim the axes of the batch itself; a result built with torch.empty or "
        "torch.zeros without device= lands on the CPU"
    )


@pytest.mark.task("ch06.3")
@pytest.mark.points(2)
def test_the_model_runs_on_another_device():
    """SmallCNN moved with .to(device) to another device (meta) returns its logits
    [B, n_classes] there, for other channel counts, classes and image sizes."""
    cases = [(2, 3, 10, 28, 28), (1, 1, 2, 12, 16), (3, 5, 4, 20, 13)]
    seen = run_on_meta("SmallCNN", cases)
    wants = [(torch.float32, (b, n)) for b, c, n, h, w in cases]
    wrong = meta_problems("SmallCNN on meta (B, C, n, H, W) = ", cases, seen, wants)
    cpu = cnn_forward(
        1, 2, (12, 16), 2
    )  # on the CPU, with values: forward is the head of the features
    flat = cpu["features"].flatten(1) @ cpu["head_weight"].T + cpu["head_bias"]
    if not judge.is_close(cpu["out"], flat, atol=1e-5, rtol=1e-5):
        wrong.append(
            "SmallCNN(1, 2, (12, 16)) on the CPU: forward(x) is not head(features(x).flatten(1)) "
            f"({first_difference(cpu['out'], flat)})"
        )
    assert not wrong, (
        f"{wrong[:3]}: a model moved to a GPU (meta stands for one here) computes there: "
        "every layer must be a registered submodule (nn.Sequential, attributes) so .to() moves "
        "it, and forward must not build tensors on the CPU (torch.zeros without device=) or "
        "size the head from a probe run at the first forward"
    )
