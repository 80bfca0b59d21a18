"""to_channels_first is an einsum relabelling of the axes; conv2d_output_hw lets PyTorch's own
shape inference answer on meta tensors (after the contract's ValueError check); SmallCNN names
its six image layers in an OrderedDict, so ``features[0]`` still indexes while the state_dict
keys read ``features.conv1.weight``. The contract fixes ``features`` and ``head``, not those names."""

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn


def to_channels_first(x: torch.Tensor) -> torch.Tensor:
    """[B, H, W, C] -> [B, C, H, W] with out[b, c, h, w] == x[b, h, w, c]."""
    return torch.einsum("bhwc->bchw", x)


def conv2d_output_hw(
    h: int,
    w: int,
    kernel: int | tuple[int, int],
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
) -> tuple[int, int]:
    """Output (height, width) of nn.Conv2d / nn.MaxPool2d (ceil_mode=False) on an h x w input."""
    kernel, stride, padding, dilation = (
        (v, v) if isinstance(v, int) else tuple(v) for v in (kernel, stride, padding, dilation)
    )
    for name, size, k, p, d in zip(("height", "width"), (h, w), kernel, padding, dilation):
        if size + 2 * p < d * (k - 1) + 1:
            raise ValueError(f"the dilated kernel does not fit into the padded {name} ({size})")
    image = torch.empty(1, 1, h, w, device="meta")
    weight = torch.empty(1, 1, *kernel, device="meta")
    out = F.conv2d(image, weight, stride=stride, padding=padding, dilation=dilation)
    return int(out.shape[-2]), int(out.shape[-1])


class SmallCNN(nn.Module):
    """conv5 -> ReLU -> maxpool2 -> conv3 (padding 1) -> ReLU -> maxpool2 -> flatten -> linear."""

    def __init__(self, in_channels: int, n_classes: int, input_hw: tuple[int, int]) -> None:
        super().__init__()
        self.features = nn.Sequential(
            OrderedDict(
                conv1=nn.Conv2d(in_channels, 8, kernel_size=5),
                act1=nn.ReLU(),
                pool1=nn.MaxPool2d(2),
                conv2=nn.Conv2d(8, 16, kernel_size=3, padding=1),
                act2=nn.ReLU(),
                pool2=nn.MaxPool2d(2),
            )
        )
        h, w = conv2d_output_hw(*input_hw, kernel=5)
        h, w = conv2d_output_hw(h, w, kernel=2, stride=2)
        h, w = conv2d_output_hw(h, w, kernel=3, padding=1)
        h, w = conv2d_output_hw(h, w, kernel=2, stride=2)
        self.head = nn.Linear(16 * h * w, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, in_channels, H, W] -> [B, n_classes]."""
        return self.head(torch.flatten(self.features(x), start_dim=1))
