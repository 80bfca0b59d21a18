"""No shape check: scores (N, 1) against labels (N,) becomes an (N, N) table, averaged
into a number that looks like a loss."""

EXPECT = r"broadcast|ValueError|differ in shape"
SELECT = "hinge"


def hinge_loss(scores, y, reduction="mean"):
    losses = torch.clamp(1 - y.to(scores.dtype) * scores, min=0)
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]
