"""The perceptron's loss max(0, -y * score): correct predictions cost nothing even when
they sit inside the margin."""

EXPECT = r"margin"
SELECT = "hinge"


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError("scores and labels differ in shape")
    losses = torch.clamp(-y.to(scores.dtype) * scores, min=0)
    return {"none": losses, "sum": losses.sum(), "mean": losses.mean()}[reduction]
