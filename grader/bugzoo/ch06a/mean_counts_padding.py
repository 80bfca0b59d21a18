"""The spec's wrong answer: a plain mean over the positions, so padding is averaged in."""

EXPECT = r"valid positions|padding"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    return x.mean(dim=dim)
