"""Moves the channels with a view of the flattened pixels and a transpose: right on a
contiguous batch, a crash on a channels-last view whose memory is in another order."""

EXPECT = r"non-contiguous|permute"
SELECT = "channels or pixel or colour"


def to_channels_first(x):
    B, H, W, C = x.shape
    return x.view(B, H * W, C).transpose(1, 2).view(B, C, H, W)
