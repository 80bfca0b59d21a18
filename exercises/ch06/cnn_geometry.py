"""ch06 — CNN geometry: where each number of an image tensor lives, how big every
feature map is, and how much of the input one output pixel can see. Read course/ch06.md,
repair the TODO(repair) lines and replace each NotImplementedError."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


def to_channels_first(x: torch.Tensor) -> torch.Tensor:
    """Reorder an image batch [B, H, W, C] to [B, C, H, W] so that out[b, c, h, w] == x[b, h, w, c]."""
    B, H, W, C = x.shape
    return x.reshape(B, C, H, W)  # TODO(ch06.1, repair) the shape is right; is every pixel?


def conv2d_output_hw(
    h: int,
    w: int,
    kernel: int | tuple[int, int],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
) -> tuple[int, int]:
    """Output (height, width) of nn.Conv2d / nn.MaxPool2d (ceil_mode=False) on an h x w input.

    kernel, stride, padding and dilation are ints or (height, width) pairs, as in PyTorch.
    Raises ValueError when the padded input is smaller than the dilated kernel.
    """
    raise NotImplementedError(
        "ch06.2 conv2d_output_hw — see course/ch06.md#how-big-is-each-feature-map"
    )


def receptive_field(layers: Iterable[nn.Module]) -> tuple[int, int]:
    """(height, width) of the input window that one output pixel of ``layers`` depends on.

    ``layers`` is an nn.Sequential or a list applied in order. Conv2d, MaxPool2d and
    AvgPool2d change the geometry; every other layer (ReLU, BatchNorm2d, ...) is pointwise.
    """
    raise NotImplementedError("ch06.4 receptive_field — see course/ch06.md#what-one-pixel-sees")


class SmallCNN(nn.Module):
    """conv5 -> ReLU -> maxpool2 -> conv3 (padding 1) -> ReLU -> maxpool2 -> flatten -> linear.

    ``features`` is the nn.Sequential of the six image layers (8 then 16 channels, no
    padding in the first conv); ``head`` is the nn.Linear whose in_features is derived from
    ``input_hw`` = (H, W). forward: [B, in_channels, H, W] -> logits [B, n_classes].
    """

    def __init__(self, in_channels: int, n_classes: int, input_hw: tuple[int, int]) -> None:
        super().__init__()
        raise NotImplementedError("ch06.3 SmallCNN — see course/ch06.md#a-head-that-fits")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, in_channels, H, W] -> [B, n_classes]."""
        raise NotImplementedError("ch06.3 SmallCNN — see course/ch06.md#a-head-that-fits")


class ChannelsLastConv(nn.Module):
    """The first convolution of a CNN whose loader yields channels-last images.

    ``image_shape`` is one image as the loader gives it, (H, W, C); ``conv`` is the
    nn.Conv2d(C, out_channels, kernel_size). forward: a batch [B, H, W, C] -> features
    [B, out_channels, H - kernel_size + 1, W - kernel_size + 1], the kernel sliding over H and W.
    """

    def __init__(
        self, image_shape: tuple[int, int, int], out_channels: int, kernel_size: int = 3
    ) -> None:
        super().__init__()
        h, w, c = image_shape
        # nn.Conv2d(c, ...) stopped at the first batch with "expected input[32, 224, 224, 3] to
        # have 3 channels, but got 224 channels instead", so the layer now takes the 224 channels
        # the error reported, and the program runs:
        self.conv = nn.Conv2d(h, out_channels, kernel_size)  # TODO(ch06.5, repair) 224 what?

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, H, W, C] -> [B, out_channels, H - kernel_size + 1, W - kernel_size + 1]."""
        return self.conv(images)  # TODO(ch06.5, repair) which axis does nn.Conv2d read as channels?
