"""to_channels_first builds a new contiguous tensor by stacking the channel planes (a copy, not a
view); output sizes use a ceiling division; the receptive field tracks the input interval behind
one output pixel; SmallCNN measures its head size with a dummy forward pass and registers ``head``
before ``features``. Values, shapes and the named submodules are those of the contract."""

import torch
from torch import nn


def to_channels_first(x: torch.Tensor) -> torch.Tensor:
    """[B, H, W, C] -> a new contiguous [B, C, H, W] with out[b, c, h, w] == x[b, h, w, c]."""
    batch, height, width, channels = x.shape
    if channels == 0:
        return x.new_empty((batch, 0, height, width))
    return torch.stack(x.unbind(dim=3), dim=1)  # C planes of [B, H, W] -> [B, C, H, W]


def _as_pair(value) -> tuple[int, int]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def conv2d_output_hw(
    h: int,
    w: int,
    kernel: int | tuple[int, int],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
) -> tuple[int, int]:
    """Output (height, width) of nn.Conv2d / nn.MaxPool2d (ceil_mode=False) on an h x w input."""
    (kh, kw), (sh, sw) = _as_pair(kernel), _as_pair(stride)
    (ph, pw), (dh, dw) = _as_pair(padding), _as_pair(dilation)
    # room left for the window to slide: positions = ceil((room + 1) / stride)
    room_h = h + 2 * ph - dh * (kh - 1) - 1
    room_w = w + 2 * pw - dw * (kw - 1) - 1
    if room_h < 0 or room_w < 0:
        raise ValueError(
            f"a {h}x{w} input padded by ({ph}, {pw}) is smaller than the dilated kernel "
            f"({dh * (kh - 1) + 1}x{dw * (kw - 1) + 1})"
        )
    return int(-(-(room_h + 1) // sh)), int(-(-(room_w + 1) // sw))


def receptive_field(layers) -> tuple[int, int]:
    """(height, width) of the input window one output pixel of ``layers`` depends on."""
    stack = list(layers)
    extent = []
    for axis in (0, 1):
        first = last = 0  # the interval of positions, on the current map, behind output pixel 0
        for layer in reversed(stack):
            if isinstance(layer, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
                k = _as_pair(layer.kernel_size)[axis]
                s = _as_pair(layer.stride)[axis]
                d = _as_pair(getattr(layer, "dilation", 1))[axis]
                first, last = first * s, last * s + d * (k - 1)  # padding shifts, never widens
        extent.append(last - first + 1)
    return extent[0], extent[1]


class SmallCNN(nn.Module):
    """conv5 -> ReLU -> maxpool2 -> conv3 (padding 1) -> ReLU -> maxpool2 -> flatten -> linear."""

    def __init__(self, in_channels: int, n_classes: int, input_hw: tuple[int, int]) -> None:
        super().__init__()
        features = nn.Sequential(
            nn.Conv2d(in_channels, 8, 5),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2),
        )
        height, width = input_hw
        try:
            with torch.no_grad():
                probe = features(torch.zeros(1, in_channels, height, width))
        except RuntimeError as err:
            raise ValueError(f"input_hw {tuple(input_hw)} is too small for SmallCNN") from err
        self.head = nn.Linear(probe[0].numel(), n_classes)
        self.features = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, in_channels, H, W] -> [B, n_classes]."""
        maps = self.features(x)
        return self.head(maps.reshape(maps.shape[0], self.head.in_features))


class ChannelsLastConv(nn.Module):
    """The first convolution of a CNN whose loader yields channels-last images (H, W, C)."""

    def __init__(
        self, image_shape: tuple[int, int, int], out_channels: int, kernel_size: int = 3
    ) -> None:
        super().__init__()
        _, _, colours = image_shape
        self.conv = nn.Conv2d(
            in_channels=colours, out_channels=out_channels, kernel_size=kernel_size
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """[B, H, W, C] -> [B, out_channels, H - k + 1, W - k + 1]."""
        return self.conv(to_channels_first(images))
