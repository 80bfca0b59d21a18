"""Hidden tests for ch05a: other sizes, channel counts, seeds and label batches than the
public ones. Messages state the property, not the test."""

import pytest
import torch

from exercises.ch05a.test_transforms import images  # helpers shared with the public twin
from harness.target import chapter_module

tf = chapter_module("ch05a", "transforms")


def kinds(violations):
    return {v.split(":")[0].strip().lower() for v in violations}


RGBN_MEAN, RGBN_STD = (0.7, 0.5, 0.3, 0.1), (0.05, 0.05, 0.05, 0.05)
RGBN = dict(
    dtype=torch.float32, value_range=(0.0, 1.0), channel_mean=RGBN_MEAN, channel_std=RGBN_STD
)


@pytest.mark.task("ch05a.1")
@pytest.mark.points(2)
def test_normalizer_on_four_channels_and_a_constant_channel():
    g = torch.Generator().manual_seed(9)
    x = torch.randn(32, 4, 3, 7, generator=g) * torch.tensor([1.0, 5.0, 20.0, 0.0]).view(1, 4, 1, 1)
    x = x + torch.tensor([3.0, -2.0, 100.0, 7.0]).view(1, 4, 1, 1)
    norm = tf.fit_normalizer(x)
    out = norm.apply(x)
    assert torch.isfinite(out).all(), "a channel with zero spread must not produce inf or nan"
    means = out.mean(dim=(0, 2, 3))
    assert torch.allclose(means, torch.zeros(4), atol=1e-3), (
        "after apply, every channel of the training data must have mean ~0 (statistics per channel over N and all trailing dims)"
    )
    stds = out[:, :3].transpose(0, 1).reshape(3, -1).std(dim=1)
    assert torch.allclose(stds, torch.ones(3), rtol=1e-2), (
        "after apply, every non-constant channel of the training data must have std ~1"
    )
    moved = x.clone()
    moved[:, 3] += 1.0  # later data in which the constant channel changes by one unit
    shift = (norm.apply(moved)[:, 3] - out[:, 3]).abs().max().item()
    assert shift == pytest.approx(1.0, rel=1e-3), (
        f"a channel with zero spread in training must get std 1: a one-unit change in it later moved "
        f"the normalized value by {shift:.3g} (an epsilon instead of std 1 blows any change up)"
    )


@pytest.mark.task("ch05a.1")
def test_normalizer_on_features_and_signals():
    g = torch.Generator().manual_seed(6)
    scale, offset = torch.tensor([2.0, 0.5, 9.0]), torch.tensor([1.0, -4.0, 30.0])
    for shape in ((200, 3), (20, 3, 10)):  # tabular (N, C) and signal (N, C, L) data
        view = (1, 3) + (1,) * (len(shape) - 2)
        x = torch.randn(*shape, generator=g) * scale.view(view) + offset.view(view)
        out = tf.fit_normalizer(x).apply(x)
        assert out.shape == x.shape, (
            f"apply on {tuple(x.shape)} data returned {tuple(out.shape)}: the statistics (C,) must "
            "broadcast as (1, C) plus one trailing 1 per trailing dim of (N, C, ...), not as (1, C, 1, 1)"
        )
        flat = out.transpose(0, 1).reshape(3, -1)
        assert torch.allclose(flat.mean(dim=1), torch.zeros(3), atol=1e-4) and torch.allclose(
            flat.std(dim=1), torch.ones(3), rtol=1e-2
        ), (
            f"fit_normalizer then apply on {tuple(x.shape)} data must give every channel mean ~0 and "
            "std ~1: statistics per channel (dim 1) over N and all trailing dims"
        )


@pytest.mark.task("ch05a.1")
def test_apply_is_per_sample_and_uses_training_statistics():
    g = torch.Generator().manual_seed(4)
    train = torch.randint(0, 256, (50, 3, 4, 4), generator=g, dtype=torch.uint8)
    norm = tf.fit_normalizer(train)
    val = torch.randint(
        0, 128, (10, 3, 4, 4), generator=g, dtype=torch.uint8
    )  # darker than training
    whole = norm.apply(val)
    one = norm.apply(val[:1])
    assert torch.allclose(one, whole[:1], atol=1e-6), (
        "normalizing one sample must give the same result as normalizing it inside a batch: apply uses stored statistics only"
    )
    assert (whole.mean(dim=(0, 2, 3)) < -0.3).all(), (
        "a darker validation set must stay darker after apply: statistics come from training data only"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_contract_on_four_channel_images():
    x = images(48, 4, RGBN_MEAN, RGBN_STD, seed=3)  # C == H == W == 4
    contract = tf.Contract(**RGBN)
    assert tf.check_contract(x, contract) == [], (
        "a correctly prepared batch must have no violations"
    )
    rotated = x[:, [1, 2, 3, 0]]
    assert kinds(tf.check_contract(rotated, contract)) == {"channel order"}, (
        "a batch whose channels are permuted (not only reversed) must be reported as a channel order violation"
    )
    assert kinds(tf.check_contract(x.permute(0, 2, 3, 1), contract)) == {"channel order"}, (
        "a channels-last batch with C == H == W must be reported as a channel order violation"
    )


@pytest.mark.task("ch05a.2")
@pytest.mark.points(2)
def test_contract_dtype_range_and_normalization_separately():
    mean, std = (0.6, 0.4, 0.2), (0.1, 0.1, 0.1)
    x = images(32, 8, mean, std, seed=5)
    scaled = tf.Contract(torch.float32, (0.0, 1.0), mean, std)
    assert kinds(tf.check_contract(x.double(), scaled)) == {"dtype"}, (
        "a float64 batch with correct values must report only the dtype"
    )
    assert "range" in kinds(tf.check_contract(x - 0.5, scaled)), (
        "values below the contract's lower bound must be reported as a range violation"
    )
    normalized = tf.Contract(torch.float32, (-6.0, 6.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
    wrong_stats = (x - 0.45) / 0.25  # normalized with one global mean/std instead of per channel
    assert kinds(tf.check_contract(wrong_stats, normalized)) == {"normalization"}, (
        "a batch normalized with the wrong statistics must be reported as a normalization violation"
    )


@pytest.mark.task("ch05a.3")
@pytest.mark.points(2)
def test_flip_a_batch_with_a_label_tensor():
    g = torch.Generator().manual_seed(2)
    imgs = torch.rand(5, 3, 3, 3, generator=g)  # (B, C, H, W) with C == H == W
    labels = torch.tensor([tf.LEFT, tf.RIGHT, tf.UP, tf.DOWN, tf.LEFT])
    keep_imgs, keep_labels = imgs.clone(), labels.clone()
    flipped, new = tf.flip_with_label(imgs, labels)
    assert torch.equal(flipped, keep_imgs.flip(-1)), (
        "a batch must be mirrored along its last (width) axis only"
    )
    assert torch.as_tensor(new).tolist() == [tf.RIGHT, tf.LEFT, tf.UP, tf.DOWN, tf.RIGHT], (
        "a left-right mirror swaps LEFT and RIGHT and leaves UP and DOWN unchanged, element by element"
    )
    assert torch.equal(imgs, keep_imgs) and torch.equal(labels, keep_labels), (
        "the inputs must not be modified in place"
    )


@pytest.mark.task("ch05a.3")
def test_flipping_twice_is_the_identity():
    g = torch.Generator().manual_seed(8)
    img = torch.rand(2, 5, 5, generator=g)
    for label in (tf.LEFT, tf.RIGHT, tf.UP, tf.DOWN):
        once, l1 = tf.flip_with_label(img, label)
        twice, l2 = tf.flip_with_label(once, int(l1))
        assert torch.equal(twice, img) and int(l2) == label, (
            "mirroring twice must give back the original image and label"
        )


@pytest.mark.task("ch05a.4")
@pytest.mark.points(2)
def test_scaling_decides_the_outcome_for_another_seed():
    scaled, raw = tf.train_with_pipeline(True, seed=3), tf.train_with_pipeline(False, seed=3)
    assert scaled.val_accuracy >= 0.95, (
        f"with the scaling step the model must reach ~1.0 validation accuracy (got {scaled.val_accuracy:.2f})"
    )
    assert raw.val_accuracy <= 0.5 and raw.epoch_losses[0] > 10, (
        "without the scaling step the raw run must stay near the majority-class share with a large first-epoch loss"
    )
    train_x = tf.make_stripe_task(3)[0].float()
    mean = train_x.mean(dim=(0, 2, 3))
    assert scaled.normalizer is not None and torch.allclose(
        torch.as_tensor(scaled.normalizer.mean).flatten(), mean, rtol=1e-3
    ), (
        "the Normalizer must be fitted on the training images of the run's own seed, and only on them"
    )
