"""Drops the size-1 axis but averages all T positions, padding included."""

EXPECT = r"padding|valid positions"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    head = _feature_mean if head is None else head
    return head(x).squeeze(-1).mean(dim=1)
