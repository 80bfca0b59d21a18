"""The channel axis is 'moved' with a reshape: right shape, pixels scrambled."""

EXPECT = r"permute"
SELECT = "channels or pixel or colour"


def to_channels_first(x):
    B, H, W, C = x.shape
    return x.reshape(B, C, H, W)
