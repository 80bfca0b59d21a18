"""Pools the per-position scores as sum(scores * mask) / count: a head fed inf or nan
padding returns nan there, and nan * 0 is still nan."""

EXPECT = r"padding|reach the mean|only valid"
SELECT = "sequence_scores"


def sequence_scores(x, mask, head=None):
    head = _feature_mean if head is None else head
    s = head(x).squeeze(-1)
    m = mask.to(s.dtype)
    return (s * m).sum(1) / m.sum(1).clamp(min=1)
