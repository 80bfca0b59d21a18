"""transpose(1, 3) moves the channels to the front but also swaps height and width;
on square images the shape cannot tell."""

EXPECT = r"height and width|x\[\d+, \d+, \d+, \d+\]"
SELECT = "channels or pixel or colour"


def to_channels_first(x):
    return x.transpose(1, 3)
