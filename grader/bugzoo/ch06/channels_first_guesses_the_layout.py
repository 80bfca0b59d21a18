"""to_channels_first guesses the layout from the sizes: a last axis of more than four that
follows a dim 1 of at most four is taken for a batch that is already channels-first and
returned unmoved, so feature maps with 8 channels of height 4 never move."""

EXPECT = r"sizes never tell|without a guess"
SELECT = "whatever"


def to_channels_first(x):
    if x.shape[-1] not in (1, 2, 3, 4) and x.shape[1] in (1, 2, 3, 4):
        return x
    return x.permute(0, 3, 1, 2)
