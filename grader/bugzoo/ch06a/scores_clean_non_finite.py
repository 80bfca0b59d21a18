"""Replaces non-finite per-position scores by 0 before pooling (nan_to_num): a position
that is valid but scores inf or nan is counted as a 0 instead of poisoning its example."""

EXPECT = r"valid position.*(nan|inf)|nan_to_num|isfinite"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    head = _feature_mean if head is None else head
    s = torch.nan_to_num(head(x).squeeze(-1), nan=0.0, posinf=0.0, neginf=0.0)
    return masked_mean(s, mask, dim=1)
