"""ch06 — CNN geometry: where each number of an image tensor lives, how big every
feature map is, and how much of the input one output pixel can see. Reference solution."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def to_channels_first(x: torch.Tensor) -> torch.Tensor:
    """Reorder an image batch [B, H, W, C] to [B, C, H, W] so that out[b, c, h, w] == x[b, h, w, c]."""
    return x.permute(0, 3, 1, 2)  # (B, H, W, C) -> (B, C, H, W)


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
    out = []
    for size, k, s, p, d in zip(
        (h, w), _pair(kernel), _pair(stride), _pair(padding), _pair(dilation)
    ):
        span = d * (k - 1) + 1  # input pixels one window covers
        if size + 2 * p < span:
            raise ValueError(
                f"input size {size} with padding {p} is smaller than the dilated kernel ({span})"
            )
        out.append((size + 2 * p - span) // s + 1)
    return out[0], out[1]


def receptive_field(layers: Iterable[nn.Module]) -> tuple[int, int]:
    """(height, width) of the input window that one output pixel of ``layers`` depends on.

    ``layers`` is an nn.Sequential or a list applied in order. Conv2d, MaxPool2d and
    AvgPool2d change the geometry; every other layer (ReLU, BatchNorm2d, ...) is pointwise.
    """
    rf, jump = [1, 1], [1, 1]  # window size, and input pixels between adjacent outputs
    for layer in layers:
        if not isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            continue
        k, s = _pair(layer.kernel_size), _pair(layer.stride)
        d = _pair(getattr(layer, "dilation", 1))
        for i in range(2):
            rf[i] += (k[i] - 1) * d[i] * jump[i]
            jump[i] *= s[i]
    return rf[0], rf[1]


class SmallCNN(nn.Module):
    """conv5 -> ReLU -> maxpool2 -> conv3 (padding 1) -> ReLU -> maxpool2 -> flatten -> linear.

    ``features`` is the nn.Sequential of the six image layers (8 then 16 channels, no
    padding in the first conv); ``head`` is the nn.Linear whose in_features is derived from
    ``input_hw`` = (H, W). forward: [B, in_channels, H, W] -> logits [B, n_classes].
    """

    def __init__(self, in_channels: int, n_classes: int, input_hw: tuple[int, int]) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 8, kernel_size=5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        h, w = input_hw
        for layer in self.features:
            if isinstance(layer, (nn.Conv2d, nn.MaxPool2d)):
                h, w = conv2d_output_hw(
                    h, w, layer.kernel_size, layer.stride, layer.padding, layer.dilation
                )
        self.head = nn.Linear(16 * h * w, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, in_channels, H, W] -> [B, n_classes]."""
        x = self.features(x)  # (B, 16, H', W')
        return self.head(x.flatten(1))  # (B, 16*H'*W') -> (B, n_classes)


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
        self.conv = nn.Conv2d(c, out_channels, kernel_size)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, H, W, C] -> [B, out_channels, H - kernel_size + 1, W - kernel_size + 1]."""
        return self.conv(images.permute(0, 3, 1, 2))  # (B, H, W, C) -> (B, C, H, W)
