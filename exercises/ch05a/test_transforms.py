"""Public tests for ch05a — run with `pytest exercises/ch05a` (add `--impl solutions` to
see the reference pass)."""

import math

import pytest
import torch

from harness.target import chapter_module

tf = chapter_module("ch05a", "transforms")

RGB_MEAN, RGB_STD = (0.6, 0.4, 0.2), (0.1, 0.1, 0.1)


def images(n, size, mean=RGB_MEAN, std=RGB_STD, seed=0):
    """(n, C, size, size) float32 in [0, 1] whose channels have clearly different means."""
    g = torch.Generator().manual_seed(seed)
    m, s = torch.tensor(mean).view(1, -1, 1, 1), torch.tensor(std).view(1, -1, 1, 1)
    return (torch.randn(n, len(mean), size, size, generator=g) * s + m).clamp(0, 1)


def kinds(violations):
    return {v.split(":")[0].strip().lower() for v in violations}


def channel_reference(x):
    """Per-channel mean and std of x (N, C, ...), one channel at a time."""
    means = [x[:, c].double().mean().item() for c in range(x.shape[1])]
    stds = [x[:, c].double().std().item() for c in range(x.shape[1])]
    return means, stds


# --- ch05a.1 fit_normalizer ---------------------------------------------------------


def uint8_images(n, seed):
    """uint8 (n, 3, 5, 5) images whose three channels have different brightness and contrast."""
    g = torch.Generator().manual_seed(seed)
    lows, highs = torch.tensor([0, 60, 120]), torch.tensor([120, 180, 255])
    u = torch.rand(n, 3, 5, 5, generator=g)
    return (lows.view(1, 3, 1, 1) + u * (highs - lows).view(1, 3, 1, 1)).to(torch.uint8)


@pytest.mark.task("ch05a.1")
@pytest.mark.points(2)
def test_normalizer_is_per_channel():
    train = uint8_images(64, seed=1)
    norm = tf.fit_normalizer(train)
    means, stds = channel_reference(train)
    got_mean, got_std = (
        torch.as_tensor(norm.mean).flatten().tolist(),
        torch.as_tensor(norm.std).flatten().tolist(),
    )
    assert got_mean == pytest.approx(means, rel=1e-4) and got_std == pytest.approx(
        stds, rel=1e-2
    ), (
        f"fit_normalizer on uint8 (64, 3, 5, 5) images: mean {[round(v, 2) for v in got_mean]}, std "
        f"{[round(v, 2) for v in got_std]}; per channel (over N, H, W) they are {[round(v, 2) for v in means]} and "
        f"{[round(v, 2) for v in stds]} — one value per channel, computed in floating point (uint8 sums overflow)"
    )
    out = norm.apply(train)
    assert out.dtype == torch.float32 and out.shape == train.shape, (
        f"apply(x) returned {out.dtype} {tuple(out.shape)}; expected float32 of the input's shape"
    )
    expected = (train.double() - torch.tensor(means).view(1, 3, 1, 1)) / torch.tensor(stds).view(
        1, 3, 1, 1
    )
    assert torch.allclose(out.double(), expected, rtol=1e-2, atol=1e-3), (
        "apply(x) should be (x - mean_c) / std_c with one mean and std per channel; a per-pixel or "
        "whole-tensor statistic gives different values"
    )


@pytest.mark.task("ch05a.1")
@pytest.mark.points(2)
def test_validation_data_never_changes_the_statistics():
    train = uint8_images(64, seed=2)
    norm = tf.fit_normalizer(train)
    mean0, std0 = norm.mean.clone(), norm.std.clone()
    before = norm.apply(train[:8])
    val = train[:16].float() + 50.0  # a validation set that is brighter than training
    out = norm.apply(val)
    assert torch.equal(norm.mean, mean0) and torch.equal(norm.std, std0), (
        "applying the normalizer to validation data changed its mean/std: the statistics are fitted on "
        "the training data once and then only used"
    )
    shift = (out.mean(dim=(0, 2, 3)) - before.mean(dim=(0, 2, 3))).tolist()
    assert all(s > 0.2 for s in shift), (
        f"apply() on a validation batch 50 levels brighter than training gave per-channel means {out.mean(dim=(0, 2, 3)).tolist()}: "
        "the brightness difference vanished, so apply standardized the batch with its own statistics — "
        "use the training statistics"
    )
    assert torch.equal(norm.apply(train[:8]), before), (
        "apply() must give the same result every time"
    )


# --- ch05a.2 check_contract ---------------------------------------------------------

SCALED = dict(
    dtype=torch.float32, value_range=(0.0, 1.0), channel_mean=RGB_MEAN, channel_std=RGB_STD
)


@pytest.mark.task("ch05a.2")
def test_a_correct_batch_has_no_violations():
    x = images(64, 3)  # C == H == W == 3
    found = tf.check_contract(x, tf.Contract(**SCALED))
    assert found == [], (
        f"check_contract on a correctly prepared float32 NCHW batch reported {found}: compute the channel "
        "statistics over N, H, W (dim 1 is the channel) and compare within the contract's tolerance"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_unscaled_pixels_break_the_range():
    x = images(64, 3)
    found = tf.check_contract(x * 255, tf.Contract(**SCALED))
    assert "range" in kinds(found), (
        f"a float32 batch with values up to ~255 (pixels never divided by 255) gave {found}: "
        "check every value against contract.value_range; start the message with 'range:'"
    )
    found = tf.check_contract((x * 255).to(torch.uint8), tf.Contract(**SCALED))
    assert {"dtype", "range"} <= kinds(found), (
        f"a uint8 0-255 batch gave {found}: expected both a 'dtype:' and a 'range:' violation"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_swapped_channels_are_a_channel_order_violation():
    x = images(64, 3)
    found = tf.check_contract(x.flip(1), tf.Contract(**SCALED))  # RGB -> BGR, same shape and range
    assert kinds(found) == {"channel order"}, (
        f"a BGR batch (channels reversed; dtype, range and shape all legal) gave {found}: its per-channel "
        "statistics match the contract in another channel order — report 'channel order:', not normalization"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_channels_last_is_a_channel_order_violation():
    x = images(64, 3)
    found = tf.check_contract(x.permute(0, 2, 3, 1), tf.Contract(**SCALED))  # NHWC, C == H == W
    assert kinds(found) == {"channel order"}, (
        f"an NHWC batch with C == H == W (so the shape is legal) gave {found}: the statistics along "
        "the last axis match the contract's channels — report 'channel order:'"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_unnormalized_data_is_a_normalization_violation():
    x = images(64, 3)
    contract = tf.Contract(torch.float32, (-5.0, 5.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    m, s = torch.tensor(RGB_MEAN).view(1, 3, 1, 1), torch.tensor(RGB_STD).view(1, 3, 1, 1)
    assert tf.check_contract((x - m) / s, contract) == [], (
        "a batch normalized per channel should satisfy a mean-0 / std-1 contract"
    )
    found = tf.check_contract(x, contract)
    assert kinds(found) == {"normalization"}, (
        f"a batch scaled to [0, 1] but never normalized, checked against a mean-0 / std-1 contract, gave {found}: "
        "its channel means (~0.6, 0.4, 0.2) and stds (~0.1) are far from the contract — report 'normalization:'"
    )


# --- ch05a.3 flip_with_label --------------------------------------------------------


def arrow(label, size=4):
    """A (size, size, size) image (C == H == W) whose bright mass sits where the arrow points."""
    img = torch.zeros(size, size, size)
    half = size // 2
    if label == tf.LEFT:
        img[:, :, :half] = 1.0
    elif label == tf.RIGHT:
        img[:, :, half:] = 1.0
    elif label == tf.UP:
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
        return tf.LEFT if h > 0 else tf.RIGHT
    return tf.UP if v > 0 else tf.DOWN


@pytest.mark.task("ch05a.3")
@pytest.mark.points(2)
def test_flip_mirrors_left_right_and_swaps_the_label():
    img = arrow(tf.LEFT)
    flipped, label = tf.flip_with_label(img, tf.LEFT)
    assert torch.equal(flipped, img.flip(-1)), (
        "flip_with_label should mirror the image left-right: pixel (c, h, w) moves to (c, h, W-1-w); "
        "with C == H == W a flip along another axis has the same shape but a different picture"
    )
    assert int(label) == tf.RIGHT == points_to(flipped), (
        f"after a horizontal flip a LEFT arrow points {points_to(flipped)} (RIGHT={tf.RIGHT}), but the label "
        f"returned is {int(label)}: an augmentation that changes the answer must change the label too"
    )


@pytest.mark.task("ch05a.3")
def test_flip_keeps_labels_a_mirror_does_not_change():
    for original in (tf.RIGHT, tf.UP, tf.DOWN):
        flipped, label = tf.flip_with_label(arrow(original), original)
        assert int(label) == points_to(flipped), (
            f"flip_with_label(image, {original}) returned label {int(label)}, but the mirrored picture points "
            f"{points_to(flipped)}: a left-right mirror swaps LEFT and RIGHT and leaves UP and DOWN alone"
        )


# --- ch05a.4 train_with_pipeline (repair) --------------------------------------------


@pytest.mark.task("ch05a.4")
@pytest.mark.points(3)
def test_the_scaling_step_decides_the_outcome():
    scaled = tf.train_with_pipeline(True)
    raw = tf.train_with_pipeline(False)
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
    run = tf.train_with_pipeline(True)
    train_x = tf.make_stripe_task(0)[0]
    means, stds = channel_reference(train_x)
    assert run.normalizer is not None, (
        "train_with_pipeline(True) returned normalizer=None: the scaling step must fit a Normalizer "
        "(fit_normalizer) and return it"
    )
    got = torch.as_tensor(run.normalizer.mean).flatten().tolist()
    assert got == pytest.approx(means, rel=1e-3), (
        f"the pipeline's Normalizer has mean {[round(v, 2) for v in got]}, but the training images' channel means are "
        f"{[round(v, 2) for v in means]}: fit on the training images only — validation data must never shape "
        "the statistics"
    )
    assert torch.as_tensor(run.normalizer.std).flatten().tolist() == pytest.approx(
        stds, rel=1e-2
    ), "the pipeline's Normalizer std differs from the training images' per-channel std"
