"""Writes the hinge as where(margin > 0, margin, 0): nan > 0 is False, so a diverged
(nan) score costs 0 instead of making the loss nan."""

EXPECT = r"nan"
SELECT = "hinge"


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError("shapes differ")
    m = 1 - y.to(scores.dtype) * scores
    losses = torch.where(m > 0, m, torch.zeros((), dtype=scores.dtype))
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    raise ValueError(reduction)
