"""Pools correctly over positions but keeps nn.Linear's size-1 output axis: (B, 1)
instead of (B,)."""

EXPECT = r"one score per|shape"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    head = _feature_mean if head is None else head
    return masked_mean(head(x), mask, dim=1)  # (B, 1)
