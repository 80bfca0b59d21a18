"""Checks only that scores and labels hold as many numbers, then reshapes the labels:
(6, 1) against (6,) is 'repaired' instead of refused, and (2, 3) against (3, 2) pairs
the wrong examples."""

EXPECT = r"ValueError|broadcast"
SELECT = "hinge"


def hinge_loss(scores, y, reduction="mean"):
    if scores.numel() != y.numel():
        raise ValueError("scores and labels differ in size")
    losses = torch.clamp(1 - y.to(scores.dtype).reshape(scores.shape) * scores, min=0)
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]
