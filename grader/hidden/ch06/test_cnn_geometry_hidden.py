"""Hidden tests for ch06: other shapes, many random layer configurations checked against
PyTorch's own layers, and receptive fields measured by backpropagation. Messages state
the property, not the test."""

import copy
import random

import pytest
import torch
from torch import nn

from harness.target import chapter_module

cg = chapter_module("ch06", "cnn_geometry")


def measured_receptive_field(layers, in_channels: int, size: int = 96):
    """(rows, cols, count) of input pixels with a nonzero gradient from the centre output
    pixel, with positive constant weights and max pools replaced by average pools."""
    probe = []
    for layer in layers:
        if isinstance(layer, nn.MaxPool2d):
            layer = nn.AvgPool2d(layer.kernel_size, layer.stride, layer.padding)
        else:
            layer = copy.deepcopy(layer)
            if isinstance(layer, nn.Conv2d):
                with torch.no_grad():
                    layer.weight.fill_(0.5)
                    if layer.bias is not None:
                        layer.bias.zero_()
        probe.append(layer)
    x = torch.ones(1, in_channels, size, size, requires_grad=True)
    y = nn.Sequential(*probe).eval()(x)
    y[0, 0, y.shape[2] // 2, y.shape[3] // 2].backward()
    touched = x.grad[0].abs().sum(0) > 0
    rows = touched.any(1).nonzero().flatten()
    cols = touched.any(0).nonzero().flatten()
    assert rows.min() > 0 and cols.min() > 0 and rows.max() < size - 1 and cols.max() < size - 1, (
        "probe image too small for this stack"
    )
    return int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1), int(touched.sum())


# ---------------------------------------------------------------- ch06.1


@pytest.mark.task("ch06.1")
@pytest.mark.points(2)
@pytest.mark.parametrize("shape", [(3, 4, 4, 4), (1, 5, 7, 3), (2, 2, 6, 2)], ids=str)
def test_channels_first_equals_the_axis_move(shape):
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))
    out = cg.to_channels_first(x)
    B, H, W, C = shape
    assert tuple(out.shape) == (B, C, H, W), (
        f"a [B, H, W, C] = {list(shape)} batch must become [B, C, H, W] = {[B, C, H, W]}, got {list(out.shape)}"
    )
    assert torch.equal(out, x.movedim(-1, 1)), (
        "out[b, c, h, w] must equal x[b, h, w, c] for every pixel: the channel axis has to move "
        "(permute), not the memory be relabelled (reshape/view), and height and width keep their order"
        + (
            " (here height and width were swapped)"
            if torch.equal(out, x.permute(0, 3, 2, 1))
            else ""
        )
    )


@pytest.mark.task("ch06.1")
def test_channels_first_on_a_non_contiguous_batch():
    base = torch.arange(2 * 4 * 4 * 4, dtype=torch.float32).reshape(2, 4, 4, 4)
    x = base.transpose(1, 2)  # a channels-last view whose memory is not in (B, H, W, C) order
    out = cg.to_channels_first(x)
    assert torch.equal(out, x.permute(0, 3, 1, 2)), (
        "on a non-contiguous [B, H, W, C] input every pixel must still land at [b, c, h, w]: "
        "the axes of the tensor move (permute), whatever its memory layout"
    )


# ---------------------------------------------------------------- ch06.2


def random_configs(seed, n, *, stride=1, dilation=1, padding=0, pairs=False):
    rng = random.Random(seed)

    def pick(spec):
        if spec == "any":
            v = rng.randint(1, 4)
        elif isinstance(spec, int):
            v = spec
        else:
            v = rng.randint(*spec)
        return v

    out = []
    while len(out) < n:
        k = (rng.randint(1, 7), rng.randint(1, 7)) if pairs else rng.randint(1, 7)
        s = (pick(stride), pick(stride)) if pairs else pick(stride)
        d = (pick(dilation), pick(dilation)) if pairs else pick(dilation)
        kk = k if pairs else (k, k)
        p = (
            (rng.randint(0, kk[0] // 2), rng.randint(0, kk[1] // 2))
            if pairs
            else (rng.randint(0, kk[0] // 2) if padding else 0)
        )
        h, w = rng.randint(1, 40), rng.randint(1, 40)
        dd = d if pairs else (d, d)
        pp = p if pairs else (p, p)
        if h + 2 * pp[0] < dd[0] * (kk[0] - 1) + 1 or w + 2 * pp[1] < dd[1] * (kk[1] - 1) + 1:
            continue
        out.append((h, w, k, s, p, d))
    return out


SWEEPS = {
    "stride-1": (
        dict(),
        "a kernel of size k removes k-1 pixels: out = in + 2*padding - (k-1)",
    ),
    "strided": (
        dict(stride=(2, 5), padding=1),
        "with a stride the count of windows rounds down (floor): a window that would hang over the "
        "edge is dropped, out = floor((in + 2*padding - span) / stride) + 1",
    ),
    "dilated": (
        dict(dilation=(2, 4), padding=1),
        "a dilated kernel spans dilation*(k-1)+1 input pixels, not k",
    ),
    "pairs": (
        dict(stride="any", dilation=(1, 3), pairs=True),
        "(height, width) pairs apply per axis: the first entry to the height, the second to the width",
    ),
}


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
@pytest.mark.parametrize("sweep", list(SWEEPS))
def test_output_size_equals_nn_conv2d(sweep):
    opts, mechanism = SWEEPS[sweep]
    for h, w, k, s, p, d in random_configs(100 + list(SWEEPS).index(sweep), 50, **opts):
        got = cg.conv2d_output_hw(h, w, k, s, p, d)
        real = tuple(nn.Conv2d(1, 1, k, s, p, d, bias=False)(torch.zeros(1, 1, h, w)).shape[-2:])
        assert tuple(got) == real, (
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) returned {got}, "
            f"a real nn.Conv2d produces {real}: {mechanism}"
        )


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
def test_output_size_equals_nn_maxpool2d():
    rng = random.Random(62)
    checked = 0
    while checked < 80:
        k = rng.randint(1, 5)
        s = rng.randint(1, 4)
        p = rng.randint(0, k // 2)
        d = rng.randint(1, 2)
        h, w = rng.randint(1, 30), rng.randint(1, 30)
        if min(h, w) + 2 * p < d * (k - 1) + 1:
            continue
        pool = nn.MaxPool2d(k, s, p, d)
        real = tuple(pool(torch.zeros(1, 1, h, w)).shape[-2:])
        got = cg.conv2d_output_hw(h, w, k, s, p, d)
        assert tuple(got) == real, (
            f"conv2d_output_hw({h}, {w}, kernel={k}, stride={s}, padding={p}, dilation={d}) returned {got}, "
            f"nn.MaxPool2d with the same window gives {real}: pooling windows follow the same floor formula "
            "as convolutions"
        )
        checked += 1


@pytest.mark.task("ch06.2")
@pytest.mark.parametrize(
    "args", [(3, 3, 5, 1, 0, 1), (10, 10, 3, 1, 0, 5), (4, 9, (5, 3), 1, 0, 1)], ids=str
)
def test_too_small_an_input_is_an_error(args):
    with pytest.raises(ValueError):
        got = cg.conv2d_output_hw(*args)
        raise AssertionError(
            f"conv2d_output_hw{args} returned {got}, but the dilated kernel does not fit into the padded "
            "input at all (nn.Conv2d refuses it): raise ValueError instead of returning a size below 1"
        )


# ---------------------------------------------------------------- ch06.3


@pytest.mark.task("ch06.3")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "c, n, hw", [(1, 2, (8, 8)), (3, 7, (31, 12)), (2, 4, (64, 48)), (1, 3, (13, 13))], ids=str
)
def test_head_is_derived_for_other_sizes(c, n, hw):
    model = cg.SmallCNN(c, n, hw)
    x = torch.randn(6, c, *hw, generator=torch.Generator().manual_seed(hw[0] * hw[1]))
    try:
        out = model(x)
    except NotImplementedError:
        raise  # a stub, not a wrong shape
    except RuntimeError as exc:
        raise AssertionError(
            f"SmallCNN({c}, {n}, input_hw={hw}) cannot run a batch of that size ({str(exc).splitlines()[0]}): "
            "the head's in_features must be derived from input_hw through every conv and pool"
        ) from None
    assert tuple(out.shape) == (6, n), (
        f"SmallCNN({c}, {n}, input_hw={hw}) returned shape {tuple(out.shape)} for 6 images, expected (6, {n}): "
        "flatten each image on its own (flatten(1)); a view(-1, K) with the wrong K changes the batch size"
    )
    feats = model.features(x).flatten(1).shape[1]
    assert model.head.in_features == feats, (
        "the head's in_features must equal the number of feature values per image"
    )
    for i in (0, 5):
        assert torch.allclose(out[i], model(x[i : i + 1])[0], atol=1e-5), (
            "each image's logits must depend on that image alone, whatever else is in the batch"
        )


@pytest.mark.task("ch06.3")
def test_model_follows_the_documented_architecture():
    model = cg.SmallCNN(3, 10, (28, 28))
    kinds = [type(m).__name__ for m in model.features]
    assert kinds == ["Conv2d", "ReLU", "MaxPool2d", "Conv2d", "ReLU", "MaxPool2d"], (
        f"SmallCNN.features should be conv5, ReLU, maxpool2, conv3, ReLU, maxpool2; got {kinds}"
    )
    assert model.head.in_features == 16 * 6 * 6 and isinstance(model.head, nn.Linear), (
        "on 28x28 the features are 16 x 6 x 6 (28 -> 24 -> 12 -> 12 -> 6), so the head is a Linear(576, n)"
    )
    assert not any(
        isinstance(p, nn.parameter.UninitializedParameter) for p in model.parameters()
    ), "every parameter must exist at construction (no lazy layers), so an optimizer can own it"


# ---------------------------------------------------------------- ch06.4

STACKS = {
    "strided-convs": (
        1,
        [nn.Conv2d(1, 2, 3, stride=2), nn.ReLU(), nn.Conv2d(2, 2, 3, stride=2), nn.Conv2d(2, 1, 3)],
    ),
    "dilated": (2, [nn.Conv2d(2, 3, 3, dilation=2), nn.ReLU(), nn.Conv2d(3, 1, 3, dilation=3)]),
    "pools": (
        1,
        [nn.Conv2d(1, 2, 3, padding=1), nn.MaxPool2d(3, 2), nn.Conv2d(2, 2, 3), nn.AvgPool2d(2)],
    ),
    "non-square": (
        1,
        [
            nn.Conv2d(1, 2, (1, 5)),
            nn.MaxPool2d((2, 1)),
            nn.Conv2d(2, 1, (3, 3), stride=(1, 2)),
            nn.Conv2d(1, 1, 3),
        ],
    ),
    "smallcnn-like": (
        3,
        [
            nn.Conv2d(3, 8, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 4, 3),
        ],
    ),
}


@pytest.mark.task("ch06.4")
@pytest.mark.points(2)
@pytest.mark.parametrize("name", list(STACKS))
def test_receptive_field_equals_backprop_measurement(name):
    in_channels, layers = STACKS[name]
    got = cg.receptive_field(nn.Sequential(*layers))
    rows, cols, _ = measured_receptive_field(layers, in_channels)
    assert tuple(got) == (rows, cols), (
        f"for a stack of {len(layers)} layers receptive_field returned {got}, but the gradient of one output "
        f"pixel reaches a {rows}x{cols} input window: each conv or pool adds (k-1)*dilation times the "
        "product of the strides (jump) of the layers before it; pooling layers count, pointwise ones do not"
    )


@pytest.mark.task("ch06.4")
def test_receptive_field_of_pointwise_layers_is_one_pixel():
    got = cg.receptive_field([nn.ReLU(), nn.Conv2d(2, 2, 1), nn.BatchNorm2d(2)])
    assert tuple(got) == (1, 1), (
        f"pointwise layers and 1x1 convolutions see a single input pixel; got {got}"
    )
