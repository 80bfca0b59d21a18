"""Averages each example's valid feature vectors first and scores the average: the same
for a linear head, wrong for any other."""

EXPECT = r"score every position first"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    if head is None:
        head = _feature_mean
    return head(masked_mean(x, mask, dim=1)).squeeze(-1)
