"""Public tests for ch06 — run with `pytest exercises/ch06` (add `--impl solutions` to
see the reference pass)."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from harness import judge
from harness.probe import because, probe
from harness.target import chapter_module

try:  # test bodies only: a split run's student process has just the harness it preloaded
    from harness.evidence import brief, first_difference
except ImportError:  # (probes never use it)
    pass

cg = chapter_module("ch06", "cnn_geometry")
PROBES_USE = "build_layer describe"  # what the probes use besides themselves (harness/strip.py)


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


# ---- layers from plain descriptions (probes build them beside your code) -------------
#
# ("conv", c_in, c_out, kernel, stride, padding, dilation), ("maxpool", kernel, stride,
# padding, dilation), ("avgpool", kernel, stride, padding), and pointwise layers
# ("relu",), ("bn", channels), ("dropout",), ("identity",). A stride of None is the
# pooling default (the kernel size).


def build_layer(spec):
    kind, *args = spec
    if kind == "conv":
        c_in, c_out, k, s, p, d = args
        return nn.Conv2d(c_in, c_out, k, stride=s, padding=p, dilation=d)
    if kind == "maxpool":
        k, s, p, d = args
        return nn.MaxPool2d(k, stride=s, padding=p, dilation=d)
    if kind == "avgpool":
        k, s, p = args
        return nn.AvgPool2d(k, stride=s, padding=p)
    if kind == "relu":
        return nn.ReLU()
    if kind == "bn":
        return nn.BatchNorm2d(args[0])
    if kind == "dropout":
        return nn.Dropout(0.1)
    if kind == "identity":
        return nn.Identity()
    raise ValueError(f"unknown layer {kind!r}")


@probe
def receptive_field_of(specs, container="list"):
    """receptive_field of the layers ``specs`` describes, passed as a list, tuple or
    nn.Sequential."""
    layers = [build_layer(s) for s in specs]
    if container == "sequential":
        layers = nn.Sequential(*layers)
    elif container == "tuple":
        layers = tuple(layers)
    return cg.receptive_field(layers)


def rf_checked(specs, container="list"):
    """receptive_field_of, with the explanation a crash most likely needs."""
    with because(
        f"receptive_field raised on {len(specs)} layers given as a {container}: layers may be "
        "an nn.Sequential or a plain list (iterate over it), and pools (no dilation attribute on "
        "AvgPool2d) and pointwise layers (no kernel_size) must be told apart"
    ):
        return receptive_field_of(specs, container)


def measured_receptive_field(specs, size: int = 32):
    """(rows, cols, count) of the input pixels whose gradient from the centre output pixel
    is nonzero, for a one-channel stand-in of ``specs``: every conv and pool becomes a
    convolution of the same kernel, stride, padding and dilation with positive constant
    weights (so nothing cancels, and no max pool routes the gradient to a single winner);
    pointwise layers are left out. The image grows until the window is clear of its
    border."""
    stand_in = []
    for spec in specs:
        kind, *args = spec
        if kind == "conv":
            k, s, p, d = args[2:]
        elif kind == "maxpool":
            k, s, p, d = args
        elif kind == "avgpool":
            (k, s, p), d = args, 1
        else:
            continue
        conv = nn.Conv2d(1, 1, k, stride=k if s is None else s, padding=p, dilation=d, bias=False)
        with torch.no_grad():
            conv.weight.fill_(0.5)
        stand_in.append(conv)
    net = nn.Sequential(*stand_in)
    while True:
        x = torch.ones(1, 1, size, size, requires_grad=True)
        try:
            y = net(x) if stand_in else x * 1.0
        except RuntimeError:  # the image is still smaller than some layer's window
            y = x[..., :0, :0]
        if min(y.shape[-2:]) >= 3:
            y[0, 0, y.shape[2] // 2, y.shape[3] // 2].backward()
            touched = x.grad[0, 0] != 0  # (H, W)
            rows = touched.any(1).nonzero().flatten()
            cols = touched.any(0).nonzero().flatten()
            if (
                rows.min() > 0
                and cols.min() > 0
                and rows.max() < size - 1
                and cols.max() < size - 1
            ):
                return (
                    int(rows.max() - rows.min() + 1),
                    int(cols.max() - cols.min() + 1),
                    int(touched.sum()),
                )
        size *= 2
        assert size <= 4096, "course bug: the measured receptive field never fits the image"


# ---------------------------------------------------------------- ch06.1 to_channels_first


@pytest.mark.task("ch06.1")
@pytest.mark.points(3)
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
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "args, kwargs, expected, why",
    [
        ((28, 28, 5), {}, (24, 24), "a 5x5 kernel without padding loses 2 pixels on each side"),
        ((32, 32, 3), {"padding": 1}, (32, 32), "padding 1 keeps a 3x3 convolution 'same'"),
        ((28, 28, 2), {"stride": 2}, (14, 14), "a 2x2 window with stride 2 halves the size"),
        (
            (8, 8, 3),
            {"stride": 2, "padding": 1},
            (4, 4),
            "(8 + 2 - 3) / 2 = 3.5 rounds down (floor): a window that would hang over the edge "
            "does not count",
        ),
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
    assert all(type(v) is int for v in got), (
        f"conv2d_output_hw{args} returned {got!r}: sizes are Python ints (nn.Linear and "
        "torch.zeros need ints), so use integer floor division //, not / and round"
    )


@pytest.mark.task("ch06.2")
@pytest.mark.points(2)
def test_pairs_apply_per_axis_like_nn_conv2d():
    cfg = dict(kernel=(3, 5), stride=(1, 2), padding=(1, 0), dilation=(2, 1))
    got = cg.conv2d_output_hw(20, 33, **cfg)
    conv = nn.Conv2d(1, 1, cfg["kernel"], cfg["stride"], cfg["padding"], cfg["dilation"])
    real = tuple(conv(torch.zeros(1, 1, 20, 33)).shape[-2:])  # the oracle: PyTorch's own layer
    assert tuple(got) == real, (
        f"conv2d_output_hw(20, 33, {cfg}) returned {got}, nn.Conv2d gives {real}: the first entry of each "
        "pair applies to the height, the second to the width"
    )


# ---------------------------------------------------------------- ch06.3 SmallCNN


def describe(layer) -> dict:
    """A layer as plain data: its class name and geometry/size attributes."""
    out = {"kind": type(layer).__name__}
    for attr in (
        "in_channels",
        "out_channels",
        "kernel_size",
        "stride",
        "padding",
        "dilation",
        "in_features",
        "out_features",
    ):
        if hasattr(layer, attr):
            out[attr] = getattr(layer, attr)
    return out


@probe
def cnn_built(in_channels, n_classes, hw):
    """SmallCNN as built, before any forward: its layers, its head, its lazy parameters."""
    torch.manual_seed(0)
    model = cg.SmallCNN(in_channels, n_classes, hw)
    return {
        "sequential": isinstance(model.features, nn.Sequential),
        "features": [describe(m) for m in model.features],
        "head": describe(model.head),
        "head_is_linear": type(model.head) is nn.Linear,
        "lazy": [
            n
            for n, p in model.named_parameters()
            if isinstance(p, nn.parameter.UninitializedParameter)
        ],
    }


@probe
def cnn_forward(in_channels, n_classes, hw, batch, singles=(), seed=6):
    """SmallCNN (seeded) on a seeded batch: the logits, the features, the head's weights,
    and the logits of chosen images run on their own."""
    torch.manual_seed(seed)
    model = cg.SmallCNN(in_channels, n_classes, hw)
    x = torch.randn(batch, in_channels, *hw, generator=torch.Generator().manual_seed(seed))
    out = model(x)
    return {
        "out": out,
        "features": model.features(x),
        "head_weight": model.head.weight,
        "head_bias": model.head.bias,
        "alone": {i: model(x[i : i + 1]) for i in singles},
    }


def output_size_problem() -> str | None:
    """Whether conv2d_output_hw, which SmallCNN derives its head size with, is wrong on a
    few layers of its own (nn.Conv2d is the oracle): then that, since a head sized from
    wrong sizes says nothing about SmallCNN."""
    for h, w, k, stride, padding in ((17, 23, 3, 1, 1), (17, 23, 2, 2, 0), (9, 8, 3, 2, 1)):
        conv = nn.Conv2d(1, 1, k, stride, padding)
        real = tuple(conv(torch.zeros(1, 1, h, w)).shape[-2:])
        try:
            got = tuple(cg.conv2d_output_hw(h, w, k, stride=stride, padding=padding))
        except Exception:  # noqa: BLE001 - a helper that raises is a wrong helper
            got = None
        if got != real:
            return (
                f"SmallCNN sizes its head with ch06.2 conv2d_output_hw, which gives {got} for "
                f"({h}, {w}, kernel {k}, stride {stride}, padding {padding}) where nn.Conv2d "
                f"gives {real}: fix it first (its tests say how)"
            )
    return None


def cnn_forward_checked(in_channels, n_classes, hw, batch, singles=()):
    try:
        return cnn_forward(in_channels, n_classes, hw, batch, singles)
    except NotImplementedError:
        raise
    except Exception:
        helper = output_size_problem()
    with because(
        f"SmallCNN({in_channels}, {n_classes}, input_hw={hw}) failed on a batch of {batch} "
        f"images of {hw[0]}x{hw[1]}: "
        + (
            helper
            or "the head's in_features must be derived from input_hw through every conv and "
            "pool, not guessed"
        )
    ):
        return cnn_forward(in_channels, n_classes, hw, batch, singles)


@pytest.mark.task("ch06.3")
@pytest.mark.points(2)
@pytest.mark.parametrize("hw", [(28, 28), (20, 32), (17, 23)], ids=["28x28", "20x32", "17x23"])
def test_head_fits_the_input_size(hw):
    seen = cnn_forward_checked(3, 10, hw, batch=4)
    out = seen["out"]
    assert tuple(out.shape) == (4, 10), (
        f"SmallCNN(3, 10, input_hw={hw}) mapped a batch of 4 images to shape {tuple(out.shape)}, expected "
        "(4, 10): one row of logits per image. If the batch size changed, flatten(1) was replaced by a "
        "view(-1, K) whose K is not the true feature size"
    )
    feats = seen["features"].flatten(1).shape[1]
    assert seen["head_weight"].shape[1] == feats, (
        f"SmallCNN(3, 10, input_hw={hw}): the head takes {seen['head_weight'].shape[1]} inputs but the "
        f"features produce {feats} numbers per image: "
        + (output_size_problem() or "derive in_features from input_hw with conv2d_output_hw")
    )


@pytest.mark.task("ch06.3")
def test_images_do_not_mix_within_a_batch():
    seen = cnn_forward_checked(1, 5, (28, 28), batch=4, singles=(1,))
    out = seen["out"]
    assert out.shape[0] == 4, (
        f"SmallCNN(1, 5, (28, 28)) returned {out.shape[0]} rows of logits for 4 images: a view(-1, K) with "
        "the wrong K regroups the numbers of several images into one row — flatten with flatten(1)"
    )
    judge.close(
        out[1:2],
        seen["alone"][1],
        "SmallCNN gave image 1 different logits inside a batch of 4 than on its own: each image's logits "
        "must depend on that image only — flatten per sample (flatten(1)), never view(-1, K)",
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.task("ch06.3")
def test_parameters_exist_at_construction():
    with because("SmallCNN(3, 10, (32, 32)) could not be built and inspected"):
        built = cnn_built(3, 10, (32, 32))
    assert not built["lazy"], (
        f"SmallCNN(3, 10, (32, 32)) has uninitialized (lazy) parameters {built['lazy']}: until the "
        "first forward they have no shape, cannot be counted or initialised, and nothing checks them "
        "against input_hw — compute the head size from input_hw at construction instead"
    )


# ---------------------------------------------------------------- ch06.4 receptive_field

CONV3 = ("conv", 1, 1, 3, 1, 0, 1)


@pytest.mark.task("ch06.4")
@pytest.mark.points(2)
@pytest.mark.parametrize(
    "specs, expected, why",
    [
        ([CONV3, CONV3], (5, 5), "two 3x3 convolutions see 5x5"),
        (
            [CONV3, ("maxpool", 2, None, 0, 1), CONV3],
            (8, 8),
            "after a stride-2 pool, neighbouring pixels are 2 input pixels apart, so the last 3x3 "
            "convolution adds 2*(3-1)",
        ),
    ],
    ids=["conv-conv", "conv-pool-conv"],
)
def test_receptive_field_of_small_stacks(specs, expected, why):
    got = rf_checked(specs)
    assert tuple(got) == expected, (
        f"receptive_field({specs}) returned {got}, expected {expected}: {why}"
    )


SMALLCNN_LIKE = [
    ("conv", 2, 4, 5, 1, 0, 1),
    ("relu",),
    ("maxpool", 2, None, 0, 1),
    ("conv", 4, 4, 3, 1, 1, 1),
    ("relu",),
    ("maxpool", 2, None, 0, 1),
]


@pytest.mark.task("ch06.4")
@pytest.mark.points(2)
def test_receptive_field_matches_the_gradient():
    got = rf_checked(SMALLCNN_LIKE, container="sequential")
    rows, cols, count = measured_receptive_field(SMALLCNN_LIKE)
    assert tuple(got) == (rows, cols), (
        f"receptive_field of nn.Sequential(conv5, relu, pool2, conv3, relu, pool2) returned {got}, but "
        f"backpropagating from one output pixel reaches a {rows}x{cols} input window: each layer adds "
        "(k-1)*dilation times the product of the strides before it, and pooling layers count"
    )
    assert count == rows * cols, (
        f"course bug: the {rows}x{cols} window should be dense for this stack, but only {count} "
        "pixels have a gradient"
    )


@pytest.mark.task("ch06.4")
def test_receptive_field_returns_height_and_width():
    specs = [("conv", 1, 1, (3, 1), 1, 0, 1), ("conv", 1, 1, (1, 5), 1, 0, 1)]
    got = rf_checked(specs)
    assert tuple(got) == (3, 5), (
        f"receptive_field of a 3x1 then a 1x5 convolution returned {brief(got)}, expected (3, 5): "
        "kernel_size is a (height, width) pair, and each axis has its own window"
    )


# ---------------------------------------------------------------- ch06.5 ChannelsLastConv


@probe
def nhwc_conv_built(image_shape, out_channels, kernel_size=None):
    """ChannelsLastConv as built (kernel_size left at its default when None): its conv's
    geometry, and the names and shapes of its parameters."""
    if kernel_size is None:
        model = cg.ChannelsLastConv(image_shape, out_channels)
    else:
        model = cg.ChannelsLastConv(image_shape, out_channels, kernel_size)
    return {
        "conv_is_conv2d": isinstance(model.conv, nn.Conv2d),
        "conv": describe(model.conv),
        "params": {n: tuple(p.shape) for n, p in model.named_parameters()},
    }


@probe
def nhwc_conv_run(image_shape, out_channels, kernel_size, batch, seed, layout="contiguous"):
    """ChannelsLastConv (seeded) on a seeded channels-last batch [B, H, W, C] (with ``layout``
    "crop": the centre crop of a larger batch, a non-contiguous view): the batch, its conv's
    weight and bias, and the features."""
    h, w, c = image_shape
    torch.manual_seed(seed)
    model = cg.ChannelsLastConv(image_shape, out_channels, kernel_size)
    g = torch.Generator().manual_seed(seed)
    if layout == "crop":
        x = torch.randn(batch, h + 2, w + 2, c, generator=g)[:, 1:-1, 1:-1]  # non-contiguous
    else:
        x = torch.randn(batch, h, w, c, generator=g)
    seen = x.clone()
    return {"x": seen, "weight": model.conv.weight, "bias": model.conv.bias, "out": model(x)}


def nhwc_conv_checked(image_shape, out_channels, kernel_size, batch, seed, layout="contiguous"):
    """nhwc_conv_run, with the explanation a crash most likely needs."""
    h, w, c = image_shape
    where = (
        "a crop of a larger channels-last batch (not contiguous: .view() needs contiguous "
        "memory, permute works on any layout)"
        if layout == "crop"
        else "a channels-last batch"
    )
    with because(
        f"ChannelsLastConv({image_shape}, {out_channels}, {kernel_size}) failed on {where} "
        f"[B, H, W, C] = {[batch, h, w, c]}: nn.Conv2d reads dimension 1 of its input as the "
        "channels, so the batch must be moved to [B, C, H, W] (permute(0, 3, 1, 2)) for a conv "
        "whose in_channels stays C; setting in_channels to the number the error reports only "
        "silences the error"
    ):
        return nhwc_conv_run(image_shape, out_channels, kernel_size, batch, seed, layout)


WRONG_MOVES = {  # what a conv with the right in_channels computed instead, and why
    "as it is": (
        lambda x: x,
        "its conv has the right in_channels but was fed the channels-last batch as it is: "
        "nn.Conv2d reads dimension 1 as the channels, so it took the H rows for channels and slid "
        "its kernel over W and C (this runs only because H == C here). Move the channel axis to "
        "dimension 1 first: permute(0, 3, 1, 2)",
    ),
    "reshape": (
        lambda x: x.reshape(x.shape[0], x.shape[3], x.shape[1], x.shape[2]),
        "the features are those of the batch reshaped to [B, C, H, W]: a reshape or view keeps "
        "the memory order (r g b r g b ..., pixel by pixel) and only relabels the axes, so each "
        "'colour plane' holds all the colours of a part of the image. Move the axis with "
        "permute(0, 3, 1, 2) (task ch06.1)",
    ),
    "swap": (
        lambda x: x.permute(0, 3, 2, 1),
        "height and width are swapped: the kernel slid over the transposed image, as after "
        "permute(0, 3, 2, 1) or transpose(1, 3); permute(0, 3, 1, 2) moves the channels and "
        "keeps H before W",
    ),
    "inverse": (
        lambda x: x.permute(0, 2, 3, 1),
        "the features are those of x.permute(0, 2, 3, 1), the opposite move (it turns "
        "[B, C, H, W] into [B, H, W, C]; on a channels-last batch it gives [B, W, C, H]). "
        "Moving the channels of [B, H, W, C] to dimension 1 is permute(0, 3, 1, 2)",
    ),
}


def _conv_or_none(x, weight, bias):
    try:
        return F.conv2d(x, weight, bias)
    except RuntimeError:  # this move does not fit the weight
        return None


def _same(got, want) -> bool:
    return (
        want is not None
        and tuple(got.shape) == tuple(want.shape)
        and judge.is_close(got.float(), want, atol=1e-5, rtol=1e-4)
    )


def nhwc_conv_problem(image_shape, out_channels, kernel_size, seen) -> str | None:
    """What is wrong with the features ``seen`` (from nhwc_conv_run), or None when they are
    the student's own conv applied over H and W of the batch moved to [B, C, H, W]."""
    h, w, c = image_shape
    x, weight, bias, out = seen["x"], seen["weight"], seen["bias"], seen["out"]
    call = (
        f"ChannelsLastConv({image_shape}, {out_channels}, {kernel_size}) on a [B, H, W, C] = "
        f"{list(x.shape)} batch"
    )
    expected = [x.shape[0], out_channels, h - kernel_size + 1, w - kernel_size + 1]
    if weight.shape[1] != c:
        if weight.shape[1] == h:
            return (
                f"{call}: its conv has in_channels={h}, the image height, where the images have "
                f"C={c} channels. That is the number the error reported as 'channels', because "
                "nn.Conv2d reads dimension 1 of its input as the channels and dimension 1 of a "
                "channels-last batch is H. With in_channels=H the error goes away, but the kernel "
                f"slides over W and C instead of H and W (the features came out {list(out.shape)}, "
                f"expected {expected}); keep in_channels=C and move the batch's channel axis to "
                "dimension 1 with permute(0, 3, 1, 2)"
            )
        return (
            f"{call}: its conv has in_channels={weight.shape[1]}, but an image of shape "
            f"(H, W, C) = {image_shape} has C={c} channels"
        )
    right = F.conv2d(x.permute(0, 3, 1, 2), weight, bias)
    if _same(out, right):
        return None
    for name, (move, why) in WRONG_MOVES.items():
        if _same(out, _conv_or_none(move(x), weight, bias)):
            if name == "as it is" and h == w == c:
                why += (
                    ". (On an H == W == C batch, x.reshape(B, C, H, W) is this same tensor: a "
                    "reshape keeps the order of the numbers and here even the shape)"
                )
            return f"{call}: {why}"
    if tuple(out.shape) != tuple(right.shape):
        return (
            f"{call} returned features of shape {list(out.shape)}, expected {expected} = "
            "[B, out_channels, H - kernel_size + 1, W - kernel_size + 1]: the kernel slides over "
            "the height and width of the images, with the channels at dimension 1"
        )
    return (
        f"{call}: the features are not those of its conv over H and W of the batch moved to "
        f"[B, C, H, W] ({first_difference(out, right)})"
    )


@pytest.mark.task("ch06.5")
@pytest.mark.points(2)
def test_nhwc_conv_takes_the_images_channels():
    with because("ChannelsLastConv((6, 9, 3), 4, 3) could not be built and inspected"):
        built = nhwc_conv_built((6, 9, 3), 4, 3)
    conv = built["conv"]
    assert built["conv_is_conv2d"], (
        f"ChannelsLastConv((6, 9, 3), 4, 3).conv is a {conv['kind']}, not an nn.Conv2d"
    )
    assert conv.get("in_channels") == 3, (
        f"ChannelsLastConv((6, 9, 3), 4, 3).conv has in_channels={conv.get('in_channels')} for "
        "images of (H, W, C) = (6, 9, 3)"
        + (
            ", the image height: the error's 'got 224 channels' is the height of a channels-last "
            "batch, which nn.Conv2d reads at dimension 1 where it expects the channels. Keep "
            "in_channels=C and move the batch's channels to dimension 1 (permute(0, 3, 1, 2))"
            if conv.get("in_channels") == 6
            else ": an image has C channels, the last entry of its shape"
        )
    )
    got = (conv.get("out_channels"), conv.get("kernel_size"))
    assert got == (4, (3, 3)), (
        f"ChannelsLastConv((6, 9, 3), 4, 3).conv has (out_channels, kernel_size) = {got}, "
        "expected (4, (3, 3))"
    )


@pytest.mark.task("ch06.5")
@pytest.mark.points(2)
def test_nhwc_conv_slides_over_height_and_width():
    seen = nhwc_conv_checked((6, 9, 3), 4, 3, batch=2, seed=65)
    problem = nhwc_conv_problem((6, 9, 3), 4, 3, seen)
    assert problem is None, problem


@pytest.mark.task("ch06.5")
def test_nhwc_conv_when_every_wrong_move_runs():
    # H == W == C: the unmoved batch, a reshape, a swapped or an inverse permute all run
    # and give the right shape; only the values tell them apart
    seen = nhwc_conv_checked((4, 4, 4), 2, 3, batch=2, seed=66)
    problem = nhwc_conv_problem((4, 4, 4), 2, 3, seen)
    assert problem is None, problem


@pytest.mark.task("ch06.5")
def test_nhwc_conv_on_the_books_batch():
    # the chapter's opening: a 224 x 224 RGB batch, where in_channels=224 "works"
    seen = nhwc_conv_checked((224, 224, 3), 8, 3, batch=1, seed=67)
    problem = nhwc_conv_problem((224, 224, 3), 8, 3, seen)
    assert problem is None, problem
