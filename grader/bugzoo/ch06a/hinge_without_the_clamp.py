"""1 - y * score without the max(0, ...): confidently correct examples get a negative
loss and pay back for the mistakes."""

EXPECT = r"max\(0, 1 - y \* score\)"
SELECT = "hinge"


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError("scores and labels differ in shape")
    losses = 1 - y.to(scores.dtype) * scores
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]
