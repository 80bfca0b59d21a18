"""Public tests for ch06 — run with `pytest exercises/ch06` (add `--impl solutions` to
see the reference pass)."""

import copy

import pytest
import torch
from torch import nn

from harness.target import chapter_module

cg = chapter_module("ch06", "cnn_geometry")


def source_of(value: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Which index of an arange tensor of ``shape`` holds ``value``."""
    idx = []
    for size in reversed(shape):
        idx.append(value % size)
        value //= size
    return tuple(reversed(idx))


def first_misplaced_pixel(x: torch.Tensor, out: torch.Tensor) -> str | None:
    """Compare out[b, c, h, w] with x[b, h, w, c] for an arange ``x``; describe the first miss."""
    B, H, W, C = x.shape
    for b in range(B):
        for c in range(C):
            for h in range(H):
                for w in range(W):
                    got = int(out[b, c, h, w])
                    if got != int(x[b, h, w, c]):
                        src = source_of(got, tuple(x.shape))
                        where = (
                            f"out[{b}, {c}, {h}, {w}] should be x[{b}, {h}, {w}, {c}] but holds the value of "
                            f"x{list(src)}"
                        )
                        if src == (b, w, h, c):
                            return (
                                f"{where}: height and width are swapped. transpose(1, 3) moves the channels "
                                "but also exchanges H and W; permute(0, 3, 1, 2) keeps their order"
                            )
                        return (
                            f"{where}. A reshape/view only relabels the same memory order (the shape is "
                            "right, the meaning is not); moving the channel axis needs permute(0, 3, 1, 2)"
                        )
    return None


def measured_receptive_field(layers, in_channels: int, size: int = 64):
    """Backprop from the centre output pixel and return (rows, cols, count) of the input
    pixels whose gradient is nonzero. Weights are set to positive constants (so nothing
    cancels) and max pools become average pools of the same window (a max pool routes the
    gradient to one winner, which would hide the rest of the window)."""
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
    touched = x.grad[0].abs().sum(0) > 0  # (H, W)
    rows = touched.any(1).nonzero().flatten()
    cols = touched.any(0).nonzero().flatten()
    assert rows.min() > 0 and cols.min() > 0 and rows.max() < size - 1 and cols.max() < size - 1, (
        "test probe: the receptive field reached the border; use a larger probe image"
    )
    return int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1), int(touched.sum())


# ---------------------------------------------------------------- ch06.1 to_channels_first


@pytest.mark.task("ch06.1")
@pytest.mark.points(2)
def test_every_pixel_lands_where_it_belongs():
    x = torch.arange(2 * 3 * 3 * 3).reshape(2, 3, 3, 3)  # B=2, H == W == C == 3
    out = cg.to_channels_first(x)
    assert tuple(out.shape) == (2, 3, 3, 3), (
        f"to_channels_first on a [2, 3, 3, 3] batch returned shape {tuple(out.shape)}"
    )
    miss = first_misplaced_pixel(x, out)
    assert miss is None, f"to_channels_first(x) with x of shape [B, H, W, C] = [2, 3, 3, 3]: {miss}"


@pytest.mark.task("ch06.1")
@pytest.mark.points(2)
def test_each_colour_plane_holds_one_colour():
    img = torch.empty(1, 3, 3, 3)  # channels-last: a 3x3 image whose red is 1, green 2, blue 3
    img[..., 0], img[..., 1], img[..., 2] = 1.0, 2.0, 3.0
    out = cg.to_channels_first(img)
    planes = [sorted(set(out[0, c].flatten().tolist())) for c in range(3)]
    assert planes == [[1.0], [2.0], [3.0]], (
        f"a channels-last image with red=1, green=2, blue=3 everywhere became planes holding {planes}; "
        "after the conversion out[0, c] must be the whole colour plane c. A reshape mixes the colours of "
        "neighbouring pixels into one plane — use permute"
    )


# ---------------------------------------------------------------- ch06.2 conv2d_output_hw


@pytest.mark.task("ch06.2")
@pytest.mark.parametrize(
    "args, kwargs, expected, why",
    [
        ((28, 28, 5), {}, (24, 24), "a 5x5 kernel without padding loses 2 pixels on each side"),
        ((32, 32, 3), {"padding": 1}, (32, 32), "padding 1 keeps a 3x3 convolution 'same'"),
        ((28, 28, 2), {"stride": 2}, (14, 14), "a 2x2 window with stride 2 halves the size"),
        ((7, 7, 3), {"stride": 2, "padding": 1}, (4, 4), "the division rounds down (floor)"),
        (
            (10, 10, 3),
            {"dilation": 2},
            (6, 6),
            "a dilated 3-kernel spans dilation*(k-1)+1 = 5 pixels",
        ),
    ],
    ids=["kernel", "padding", "pool", "floor", "dilation"],
)
def test_output_size_of_the_books_layers(args, kwargs, expected, why):
    got = cg.conv2d_output_hw(*args, **kwargs)
    assert tuple(got) == expected, (
        f"conv2d_output_hw{args} with {kwargs or 'defaults'} returned {got}, expected {expected}: {why}"
    )


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
def test_pairs_apply_per_axis_like_nn_conv2d():
    cfg = dict(kernel=(3, 5), stride=(1, 2), padding=(1, 0), dilation=(2, 1))
    got = cg.conv2d_output_hw(20, 32, **cfg)
    conv = nn.Conv2d(1, 1, cfg["kernel"], cfg["stride"], cfg["padding"], cfg["dilation"])
    real = tuple(conv(torch.zeros(1, 1, 20, 32)).shape[-2:])
    assert tuple(got) == real, (
        f"conv2d_output_hw(20, 32, {cfg}) returned {got}, nn.Conv2d gives {real}: the first entry of each "
        "pair applies to the height, the second to the width"
    )


# ---------------------------------------------------------------- ch06.3 SmallCNN


def run_cnn(in_channels, n_classes, hw, batch):
    model = cg.SmallCNN(in_channels, n_classes, hw)
    x = torch.randn(batch, in_channels, *hw, generator=torch.Generator().manual_seed(6))
    try:
        return model, x, model(x)
    except NotImplementedError:
        raise  # a stub, not a wrong shape
    except RuntimeError as exc:
        raise AssertionError(
            f"SmallCNN({in_channels}, {n_classes}, input_hw={hw}) failed on a {list(x.shape)} batch: "
            f"{str(exc).splitlines()[0]}. The head's in_features must be derived from input_hw through "
            "every conv and pool, not guessed"
        ) from None


@pytest.mark.task("ch06.3")
@pytest.mark.points(2)
@pytest.mark.parametrize("hw", [(28, 28), (20, 32), (17, 23)], ids=["28x28", "20x32", "17x23"])
def test_head_fits_the_input_size(hw):
    model, x, out = run_cnn(3, 10, hw, batch=4)
    assert tuple(out.shape) == (4, 10), (
        f"SmallCNN(3, 10, input_hw={hw}) mapped a batch of 4 images to shape {tuple(out.shape)}, expected "
        "(4, 10): one row of logits per image. If the batch size changed, flatten(1) was replaced by a "
        "view(-1, K) whose K is not the true feature size"
    )
    feats = model.features(x).flatten(1).shape[1]
    assert model.head.in_features == feats, (
        f"SmallCNN(3, 10, input_hw={hw}): head.in_features is {model.head.in_features} but the features "
        f"produce {feats} numbers per image (derive it from input_hw with conv2d_output_hw)"
    )


@pytest.mark.task("ch06.3")
def test_images_do_not_mix_within_a_batch():
    model, x, out = run_cnn(1, 5, (28, 28), batch=4)
    assert out.shape[0] == 4, (
        f"SmallCNN(1, 5, (28, 28)) returned {out.shape[0]} rows of logits for 4 images: a view(-1, K) with "
        "the wrong K regroups the numbers of several images into one row — flatten with flatten(1)"
    )
    alone = model(x[1:2])
    assert torch.allclose(out[1:2], alone, atol=1e-5), (
        "SmallCNN gave image 1 different logits inside a batch of 4 than on its own: each image's logits "
        "must depend on that image only — flatten per sample (flatten(1)), never view(-1, K)"
    )


@pytest.mark.task("ch06.3")
def test_parameters_exist_at_construction():
    model = cg.SmallCNN(3, 10, (32, 32))
    lazy = [
        n for n, p in model.named_parameters() if isinstance(p, nn.parameter.UninitializedParameter)
    ]
    assert not lazy, (
        f"SmallCNN(3, 10, (32, 32)) has uninitialized (lazy) parameters {lazy}: an optimizer built right "
        "after construction would not own them — compute the head size from input_hw instead"
    )


# ---------------------------------------------------------------- ch06.4 receptive_field


@pytest.mark.task("ch06.4")
@pytest.mark.parametrize(
    "layers, expected, why",
    [
        ([nn.Conv2d(1, 1, 3), nn.Conv2d(1, 1, 3)], (5, 5), "two 3x3 convolutions see 5x5"),
        (
            [nn.Conv2d(1, 1, 3), nn.MaxPool2d(2), nn.Conv2d(1, 1, 3)],
            (8, 8),
            "after a stride-2 pool, neighbouring pixels are 2 input pixels apart, so the last 3x3 "
            "convolution adds 2*(3-1)",
        ),
    ],
    ids=["conv-conv", "conv-pool-conv"],
)
def test_receptive_field_of_small_stacks(layers, expected, why):
    got = cg.receptive_field(layers)
    assert tuple(got) == expected, (
        f"receptive_field({layers}) returned {got}, expected {expected}: {why}"
    )


@pytest.mark.task("ch06.4")
@pytest.mark.points(2)
def test_receptive_field_matches_the_gradient():
    layers = [
        nn.Conv2d(2, 4, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
    ]
    got = cg.receptive_field(layers)
    rows, cols, count = measured_receptive_field(layers, in_channels=2)
    assert tuple(got) == (rows, cols), (
        f"receptive_field of conv5-relu-pool2-conv3-relu-pool2 returned {got}, but backpropagating from one "
        f"output pixel reaches a {rows}x{cols} input window: each layer adds (k-1)*dilation times the "
        "product of the strides before it, and pooling layers count"
    )
    assert count == rows * cols, (
        f"the {rows}x{cols} window should be dense for this stack, but only {count} pixels have a gradient"
    )
