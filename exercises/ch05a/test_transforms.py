"""Public tests for ch05a — run with `pytest exercises/ch05a` (add `--impl solutions` to
see the reference pass)."""

import copy
import functools
import math

import pytest
import torch

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
except ImportError:  # (probes never use them)
    pass

tf = chapter_module("ch05a", "transforms")

RGB_MEAN, RGB_STD = (0.6, 0.4, 0.2), (0.1, 0.1, 0.1)
LEFT, RIGHT, UP, DOWN = 0, 1, 2, 3  # the module's orientation labels (checked below)


def images(n, size, mean=RGB_MEAN, std=RGB_STD, seed=0):
    """(n, C, size, size) float32 in [0, 1] whose channels have clearly different means."""
    g = torch.Generator().manual_seed(seed)
    m, s = torch.tensor(mean).view(1, -1, 1, 1), torch.tensor(std).view(1, -1, 1, 1)
    return (torch.randn(n, len(mean), size, size, generator=g) * s + m).clamp(0, 1)


def kinds(violations):
    return {str(v).split(":")[0].strip().lower() for v in violations}


def channel_reference(x):
    """Per-channel mean and std of x (N, C, ...), one channel at a time, in float64."""
    means = [x[:, c].double().mean().item() for c in range(x.shape[1])]
    stds = [x[:, c].double().std().item() for c in range(x.shape[1])]
    return means, stds


def standardized_reference(x, means, stds):
    """(x - mean_c) / std_c with the statistics broadcast over dim 1, in float64."""
    view = (1, -1) + (1,) * (x.dim() - 2)
    m = torch.tensor(means, dtype=torch.float64).view(view)
    return (x.double() - m) / torch.tensor(stds, dtype=torch.float64).view(view)


# --- ch05a.1 fit_normalizer ---------------------------------------------------------


@probe
def normalized(train, batches=()):
    """fit_normalizer(train), then apply to every batch twice: the statistics before and
    after applying, the outputs, and whether train or any batch was changed in place."""
    kept = [train.clone()] + [b.clone() for b in batches]
    norm = tf.fit_normalizer(train)
    mean, std = copy.deepcopy(norm.mean), copy.deepcopy(norm.std)
    outs = [norm.apply(b) for b in batches]
    again = [norm.apply(b) for b in batches]
    return {
        "mean": mean,
        "std": std,
        "outs": outs,
        "again": again,
        "mean_after": norm.mean,
        "std_after": norm.std,
        "inputs_unchanged": all(judge.is_equal(k, x) for k, x in zip(kept, [train, *batches])),
    }


def uint8_images(n, seed, size=5):
    """uint8 (n, 3, size, size) images whose three channels have different brightness and contrast."""
    g = torch.Generator().manual_seed(seed)
    lows, highs = torch.tensor([0, 60, 120]), torch.tensor([120, 180, 255])
    u = torch.rand(n, 3, size, size, generator=g)
    return (lows.view(1, 3, 1, 1) + u * (highs - lows).view(1, 3, 1, 1)).to(torch.uint8)


def statistics_problem(got, train):
    """Why ``got`` (a normalized() result) does not hold train's per-channel statistics, or None."""
    means, stds = channel_reference(train)
    mean, std = got["mean"], got["std"]
    for name, value, want in (("mean", mean, means), ("std", std, stds)):
        if not isinstance(value, torch.Tensor):
            return f"Normalizer.{name} is a {type(value).__name__}, expected a float32 tensor (C,)"
        if value.dtype != torch.float32 or tuple(value.shape) != (len(want),):
            return (
                f"Normalizer.{name} is {value.dtype} of shape {tuple(value.shape)}, expected float32 "
                f"of shape ({len(want)},): one value per channel"
            )
    # std within 1%: the unbiased and the biased estimator are both accepted
    means, stds = torch.tensor(means, dtype=torch.float64), torch.tensor(stds, dtype=torch.float64)
    if not judge.is_close(mean.double(), means, atol=1e-4, rtol=1e-4):
        return f"mean: {first_difference(mean, means, atol=1e-4)}"
    if not judge.is_close(std.double(), stds, atol=1e-8, rtol=1e-2):
        return f"std: {first_difference(std, stds, rtol=1e-2)}"
    return None


@pytest.mark.task("ch05a.1")
@pytest.mark.points(2)
def test_normalizer_is_per_channel():
    train = uint8_images(64, seed=1)
    with because(
        "fit_normalizer on a uint8 batch raised: uint8 has no mean or std (they need a "
        "floating dtype), so convert to float first"
    ):
        got = normalized(train, [train])
    problem = statistics_problem(got, train)
    means, stds = channel_reference(train)
    assert problem is None, (
        f"fit_normalizer on uint8 (64, 3, 5, 5) images: {problem}; per channel (over N, H, W) the "
        f"statistics are {[round(v, 2) for v in means]} and {[round(v, 2) for v in stds]} — one value "
        "per channel, computed in floating point (uint8 has no mean, and uint8 products such as "
        "x * x wrap around at 256)"
    )
    out = got["outs"][0]
    assert out.dtype == torch.float32 and out.shape == train.shape, (
        f"apply(x) returned {out.dtype} {tuple(out.shape)}; expected float32 of the input's shape"
    )
    expected = standardized_reference(train, means, stds)
    judge.close(
        out.double(),
        expected,
        "apply(x) should be (x - mean_c) / std_c with one mean and std per channel; a per-pixel or "
        f"whole-tensor statistic gives different values: {first_difference(out, expected, 1e-3, 1e-2)}",
        atol=1e-3,
        rtol=1e-2,
    )


@pytest.mark.task("ch05a.1")
def test_normalizer_axes_on_square_images():
    """C == H == W: statistics over the wrong axes still have shape (C,)."""
    train = uint8_images(10, seed=4, size=3)  # (10, 3, 3, 3)
    got = normalized(train, [train])
    problem = statistics_problem(got, train)
    assert problem is None, (
        f"fit_normalizer on uint8 (10, 3, 3, 3) images (C == H == W): {problem}; the channel is dim 1: "
        "reduce over N, H and W (every dim except 1) — statistics along H or W have the same shape"
    )


@pytest.mark.task("ch05a.1")
@pytest.mark.points(2)
def test_validation_data_never_changes_the_statistics():
    train = uint8_images(64, seed=2)
    val = train[:16].float() + 50.0  # a validation set that is brighter than training
    got = normalized(train, [train[:8], val])
    before, out = got["outs"]
    assert judge.is_equal(got["mean_after"], got["mean"]) and judge.is_equal(
        got["std_after"], got["std"]
    ), (
        "applying the normalizer to validation data changed its mean/std: the statistics are fitted on "
        "the training data once and then only used"
    )
    shift = (out.mean(dim=(0, 2, 3)) - before.mean(dim=(0, 2, 3))).tolist()
    assert all(s > 0.2 for s in shift), (
        f"apply() on a validation batch 50 levels brighter than training gave per-channel means "
        f"{[round(v, 3) for v in out.mean(dim=(0, 2, 3)).tolist()]}: the brightness difference vanished, "
        "so apply standardized the batch with its own statistics — use the training statistics"
    )
    assert all(judge.is_equal(a, b) for a, b in zip(got["outs"], got["again"])), (
        "apply() must give the same result every time"
    )


# --- ch05a.2 check_contract ---------------------------------------------------------


@probe
def violations(batch, dtype, value_range, channel_mean, channel_std, tol=None):
    """check_contract(batch, Contract(...)) for a contract built from these fields."""
    fields = (dtype, value_range, channel_mean, channel_std) + (() if tol is None else (tol,))
    return tf.check_contract(batch, tf.Contract(*fields))


SCALED = dict(
    dtype=torch.float32, value_range=(0.0, 1.0), channel_mean=RGB_MEAN, channel_std=RGB_STD
)


@pytest.mark.task("ch05a.2")
def test_a_correct_batch_has_no_violations():
    x = images(64, 3)  # C == H == W == 3
    found = violations(x, **SCALED)
    assert found == [], (
        f"check_contract on a correctly prepared float32 NCHW batch reported {found}: compute the channel "
        "statistics over N, H, W (dim 1 is the channel) and compare within the contract's tolerance"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_unscaled_pixels_break_the_range():
    x = images(64, 3)
    found = violations(x * 255, **SCALED)
    assert kinds(found) == {"range", "normalization"}, (
        f"a float32 batch with values up to ~255 (pixels never divided by 255) gave {found}: "
        "check every value against contract.value_range ('range:'), and its channel statistics "
        "(means ~150, not ~0.5) fit the contract in no order ('normalization:')"
    )
    with because("check_contract on a uint8 batch raised: compute its statistics in float"):
        found = violations((x * 255).to(torch.uint8), **SCALED)
    assert kinds(found) == {"dtype", "range", "normalization"}, (
        f"a uint8 0-255 batch gave {found}: expected a 'dtype:', a 'range:' and a 'normalization:' "
        "violation — report every clause the batch breaks, not only the first"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_swapped_channels_are_a_channel_order_violation():
    x = images(64, 3)
    found = violations(x.flip(1), **SCALED)  # RGB -> BGR, same shape and range
    assert kinds(found) == {"channel order"}, (
        f"a BGR batch (channels reversed; dtype, range and shape all legal) gave {found}: its per-channel "
        "statistics match the contract in another channel order — report 'channel order:', not normalization"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_channels_last_is_a_channel_order_violation():
    x = images(64, 3)
    found = violations(x.permute(0, 2, 3, 1), **SCALED)  # NHWC, C == H == W
    assert kinds(found) == {"channel order"}, (
        f"an NHWC batch with C == H == W (so the shape is legal) gave {found}: the statistics along "
        "the last axis match the contract's channels — report 'channel order:'"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_unnormalized_data_is_a_normalization_violation():
    x = images(64, 3)
    contract = dict(
        dtype=torch.float32,
        value_range=(-5.0, 5.0),
        channel_mean=(0.0, 0.0, 0.0),
        channel_std=(1.0, 1.0, 1.0),
    )
    m, s = torch.tensor(RGB_MEAN).view(1, 3, 1, 1), torch.tensor(RGB_STD).view(1, 3, 1, 1)
    assert violations((x - m) / s, **contract) == [], (
        "a batch normalized per channel should satisfy a mean-0 / std-1 contract"
    )
    found = violations(x, **contract)
    assert kinds(found) == {"normalization"}, (
        f"a batch scaled to [0, 1] but never normalized, checked against a mean-0 / std-1 contract, gave {found}: "
        "its channel means (~0.6, 0.4, 0.2) and stds (~0.1) are far from the contract — report 'normalization:'"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_every_violation_is_reported_not_only_the_first():
    x = images(64, 3)
    found = violations(x.flip(1).double(), **SCALED)
    assert kinds(found) == {"dtype", "channel order"}, (
        f"a float64 BGR batch gave {found}: it breaks two clauses, so expect a 'dtype:' and a "
        "'channel order:' violation — the checks are independent, do not stop at the first"
    )
    spiky = x.flip(1).clone()
    spiky[0, 0, 0, 0] = 1.7  # one value outside [0, 1]; the statistics barely move
    found = violations(spiky, **SCALED)
    assert kinds(found) == {"range", "channel order"}, (
        f"a BGR batch with one value at 1.7 gave {found}: expected a 'range:' and a 'channel order:' "
        "violation — a range problem does not make the channel statistics meaningless"
    )


def exact_statistics(n, size, means, stds, seed=0):
    """(n, C, size, size) float32 whose per-channel sample mean and std are exactly ``means`` and ``stds``."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, len(means), size, size, generator=g, dtype=torch.float64)
    z = (z - z.mean(dim=(0, 2, 3), keepdim=True)) / z.std(dim=(0, 2, 3), keepdim=True)
    m, s = torch.tensor(means).view(1, -1, 1, 1), torch.tensor(stds).view(1, -1, 1, 1)
    return (z * s + m).float()


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_the_tolerance_is_in_units_of_each_channels_std():
    wide = dict(SCALED, value_range=(-10.0, 10.0))
    inside = exact_statistics(40, 4, (0.6 + 0.015, 0.4, 0.2 - 0.015), RGB_STD)  # 0.15 std off
    found = violations(inside, **wide)
    assert found == [], (
        f"channel means 0.15 expected std away from the contract (tol 0.25) gave {found}: "
        "statistics within tol * channel_std of the contract match"
    )
    outside = exact_statistics(40, 4, (0.6, 0.4 + 0.05, 0.2), RGB_STD)  # 0.5 std off
    found = violations(outside, **wide)
    assert kinds(found) == {"normalization"}, (
        f"a channel mean 0.05 = 0.5 expected std away from the contract (tol 0.25) gave {found}: the "
        "tolerance is tol * channel_std (0.025 here), not tol itself in absolute units"
    )
    spread = exact_statistics(40, 4, RGB_MEAN, (0.1, 0.14, 0.1))  # std 0.4 std too wide
    found = violations(spread, **wide)
    assert kinds(found) == {"normalization"}, (
        f"a channel whose std is 0.14 instead of 0.1 gave {found}: the std must match too, within "
        "tol * channel_std"
    )


# --- ch05a.3 flip_with_label --------------------------------------------------------


def arrow(label, size=4):
    """A (size, size, size) image (C == H == W) whose bright mass sits where the arrow points."""
    img = torch.zeros(size, size, size)
    half = size // 2
    if label == LEFT:
        img[:, :, :half] = 1.0
    elif label == RIGHT:
        img[:, :, half:] = 1.0
    elif label == UP:
        img[:, :half, :] = 1.0
    else:
        img[:, half:, :] = 1.0
    img[:, 0, 0] += 0.5  # one marked corner makes every flip axis visible
    return img


def points_to(img):
    """Which way the bright mass points (LEFT/RIGHT/UP/DOWN), read from the picture."""
    rows, cols = img.mean(dim=(0, 2)), img.mean(dim=(0, 1))
    h = cols[: len(cols) // 2].sum() - cols[len(cols) // 2 :].sum()
    v = rows[: len(rows) // 2].sum() - rows[len(rows) // 2 :].sum()
    if abs(h) > abs(v):
        return LEFT if h > 0 else RIGHT
    return UP if v > 0 else DOWN


@pytest.mark.task("ch05a.3")
@pytest.mark.points(2)
def test_flip_mirrors_left_right_and_swaps_the_label():
    assert (tf.LEFT, tf.RIGHT, tf.UP, tf.DOWN) == (LEFT, RIGHT, UP, DOWN), (
        "the module's LEFT, RIGHT, UP, DOWN must stay 0, 1, 2, 3"
    )
    img = arrow(LEFT)
    flipped, label = tf.flip_with_label(img, LEFT)
    judge.equal(
        flipped,
        img.flip(-1),
        "flip_with_label should mirror the image left-right: pixel (c, h, w) moves to (c, h, W-1-w); "
        "with C == H == W a flip along another axis has the same shape but a different picture: "
        f"{first_difference(flipped, img.flip(-1))}",
    )
    assert int(label) == RIGHT == points_to(flipped), (
        f"after a horizontal flip a LEFT arrow points {points_to(flipped)} (RIGHT={RIGHT}), but the label "
        f"returned is {int(label)}: an augmentation that changes the answer must change the label too"
    )


@pytest.mark.task("ch05a.3")
def test_flip_keeps_labels_a_mirror_does_not_change():
    for original in (RIGHT, UP, DOWN):
        flipped, label = tf.flip_with_label(arrow(original), original)
        assert int(label) == points_to(flipped), (
            f"flip_with_label(image, {original}) returned label {int(label)}, but the mirrored picture points "
            f"{points_to(flipped)}: a left-right mirror swaps LEFT and RIGHT and leaves UP and DOWN alone"
        )
        assert type(label) is int, (
            f"flip_with_label(image, {original}) with an int label returned a "
            f"{type(label).__name__}: a label comes back as it went in (an int for an int, a "
            "tensor for a tensor), so a Dataset's targets keep one type"
        )


@probe
def flip_observed(image, label):
    """flip_with_label on copies kept aside: its outputs, whether the inputs were changed, and
    the module-qualified type name of the label that came back, read here (what crosses to
    the test turns a numpy integer into an int)."""
    kept_image = image.clone()
    kept_label = label.clone() if isinstance(label, torch.Tensor) else label
    flipped, new = tf.flip_with_label(image, label)
    same_label = (
        judge.is_equal(label, kept_label)
        if isinstance(label, torch.Tensor)
        else label == kept_label
    )
    kind = f"{type(new).__module__}.{type(new).__qualname__}"
    return flipped, new, judge.is_equal(image, kept_image) and bool(same_label), kind


MIRRORED = {LEFT: RIGHT, RIGHT: LEFT, UP: UP, DOWN: DOWN}


@pytest.mark.task("ch05a.3")
@pytest.mark.points(2)
def test_flip_maps_a_0d_label_tensor():
    """A Dataset's label is often torch.tensor(k), a 0-d int64 tensor: it is mirrored too."""
    for original in (LEFT, RIGHT, UP, DOWN):
        img = arrow(original)
        flipped, new, unchanged, _ = flip_observed(img, torch.tensor(original))
        judge.equal(
            flipped,
            img.flip(-1),
            f"flip_with_label(image, torch.tensor({original})) did not mirror the image "
            f"left-right: {first_difference(flipped, img.flip(-1))}",
        )
        assert isinstance(new, torch.Tensor) and new.dim() == 0 and new.dtype == torch.int64, (
            f"flip_with_label(image, torch.tensor({original})) returned the label {brief(new)}: "
            "a 0-d int64 label tensor comes back as a 0-d int64 tensor (not an int, not a "
            "vector of one), so a Dataset's targets keep one type and shape"
        )
        assert int(new) == MIRRORED[original] == points_to(flipped), (
            f"flip_with_label(image, torch.tensor({original})) returned label {int(new)}, but the "
            f"mirrored picture points {points_to(flipped)}: a 0-d tensor label is mapped like any "
            "other (LEFT <-> RIGHT) — a dict lookup never matches a tensor key, and a tensor "
            "with no dims must not be skipped by a test for 'batched' labels"
        )
        assert unchanged, (
            f"flip_with_label(image, torch.tensor({original})) changed the caller's image or "
            "label in place: build the new label in a copy"
        )


# --- ch05a.4 train_with_pipeline (repair) --------------------------------------------


@functools.cache
def pipeline(scale, *seed_and_epochs):
    """train_with_pipeline's run (deterministic: one run per setting serves every test).
    Arguments left out are left out of the call too, so the defaults are the student's own."""
    return tf.train_with_pipeline(scale, *seed_and_epochs)


@pytest.mark.task("ch05a.4")
@pytest.mark.points(3)
def test_the_scaling_step_decides_the_outcome():
    scaled, raw = pipeline(True), pipeline(False)
    assert raw.input_max > 100 and raw.epoch_losses[0] > 10 and raw.val_accuracy <= 0.5, (
        f"without scaling: inputs up to {raw.input_max:.0f}, first-epoch loss {raw.epoch_losses[0]:.1f}, validation "
        f"accuracy {raw.val_accuracy:.2f}; the book's run has inputs in the hundreds, a loss in the tens and "
        "accuracy at the share of the largest class (0.40)"
    )
    assert -3 < scaled.input_min and scaled.input_max < 3, (
        f"with scale=True the model saw inputs in [{scaled.input_min:.1f}, {scaled.input_max:.1f}]: the "
        "scaling step should bring them to a few units around 0 — fit a Normalizer on the training images and "
        "apply it to the training and the validation images"
    )
    assert scaled.val_accuracy >= 0.95 and math.isfinite(scaled.epoch_losses[-1]), (
        f"with scale=True validation accuracy is {scaled.val_accuracy:.2f} (raw run: {raw.val_accuracy:.2f}); "
        "expected ~1.0 — apply the same fitted Normalizer to the training and the validation images"
    )


@pytest.mark.task("ch05a.4")
@pytest.mark.points(2)
def test_the_pipeline_fits_on_training_images_only():
    run = pipeline(True)
    train_x = tf.make_stripe_task()[0]  # the default data: seed 0, as train_with_pipeline's default
    means, stds = channel_reference(train_x)
    assert run.normalizer is not None, (
        "train_with_pipeline(True) returned normalizer=None: the scaling step must fit a Normalizer "
        "(fit_normalizer) and return it"
    )
    got = torch.as_tensor(run.normalizer.mean).flatten().tolist()
    judge.number(
        got,
        means,
        f"the pipeline's Normalizer has mean {[round(v, 2) for v in got]}, but the training images' channel means are "
        f"{[round(v, 2) for v in means]}: fit on the training images only — validation data must never shape "
        "the statistics",
        abs=1e-12,
        rel=1e-3,
    )
    std = torch.as_tensor(run.normalizer.std).flatten().tolist()
    judge.number(
        std,
        stds,
        f"the pipeline's Normalizer std is {brief(std)}, the training images' per-channel std is "
        f"{brief(stds)}: fit on the training images only",
        abs=1e-12,
        rel=1e-2,
    )
