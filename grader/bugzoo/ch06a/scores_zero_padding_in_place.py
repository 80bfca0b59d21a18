"""Zeroes the caller's padded positions in place (x[~mask] = 0) before scoring: the
scores are right, but the tensor the caller passed in has been changed."""

EXPECT = r"modified|in place|left unchanged|changed its argument `x`"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    head = _feature_mean if head is None else head
    with torch.no_grad():
        x[~mask.to(torch.bool)] = 0
    return masked_mean(head(x).squeeze(-1), mask, dim=1)
