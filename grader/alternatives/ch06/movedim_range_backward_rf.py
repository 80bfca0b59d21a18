"""Channels move with movedim; output sizes count the window's start positions with range();
the receptive field is walked backwards from one output pixel; ChannelsLastConv feeds the conv a
contiguous channels-first copy. Each gives the values the contract asks for."""

import operator

import torch
from torch import nn


def _hw(value) -> tuple[int, int]:
    """An int, or a (height, width) pair, as two ints."""
    try:
        single = operator.index(value)
    except TypeError:
        height, width = value
        return operator.index(height), operator.index(width)
    return single, single


def to_channels_first(x: torch.Tensor) -> torch.Tensor:
    """[B, H, W, C] -> [B, C, H, W] with out[b, c, h, w] == x[b, h, w, c]."""
    return x.movedim(-1, 1)


def conv2d_output_hw(
    h: int,
    w: int,
    kernel: int | tuple[int, int],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
) -> tuple[int, int]:
    """Output (height, width) of nn.Conv2d / nn.MaxPool2d (ceil_mode=False) on an h x w input."""
    sizes = []
    for axis, (n, k, s, p, d) in enumerate(
        zip((h, w), _hw(kernel), _hw(stride), _hw(padding), _hw(dilation))
    ):
        reach = (k - 1) * d  # offset of the window's last tap from its first
        padded = n + 2 * p
        starts = range(0, padded - reach, s)  # every first-tap position that keeps the window in
        if len(starts) == 0:
            name = "height" if axis == 0 else "width"
            raise ValueError(
                f"padded {name} {padded} cannot hold a kernel spanning {reach + 1} pixels"
            )
        sizes.append(len(starts))
    return sizes[0], sizes[1]


def receptive_field(layers) -> tuple[int, int]:
    """(height, width) of the input window one output pixel of ``layers`` depends on."""
    geometric = [
        layer for layer in layers if isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d))
    ]
    window = [1, 1]  # measured in pixels of the map after the layers seen so far (from the end)
    for layer in reversed(geometric):
        k, s = _hw(layer.kernel_size), _hw(layer.stride)
        d = _hw(layer.dilation) if hasattr(layer, "dilation") else (1, 1)
        for axis in (0, 1):
            window[axis] = (window[axis] - 1) * s[axis] + (k[axis] - 1) * d[axis] + 1
    return window[0], window[1]


class ChannelsLastConv(nn.Module):
    """The first convolution of a CNN whose loader yields channels-last images (H, W, C)."""

    def __init__(
        self, image_shape: tuple[int, int, int], out_channels: int, kernel_size: int = 3
    ) -> None:
        super().__init__()
        channels = image_shape[-1]
        self.conv = nn.Conv2d(channels, out_channels, kernel_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, H, W, C] -> [B, out_channels, H - k + 1, W - k + 1]."""
        return self.conv(images.movedim(3, 1).contiguous())
