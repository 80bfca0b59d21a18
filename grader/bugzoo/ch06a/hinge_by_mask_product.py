"""hinge_loss as margin * (margin > 0): the margin times a 0/1 mask instead of max(0, margin).
It agrees wherever the margin is finite, but an infinite score on the right side
(-inf with label -1) gives -inf * 0 = nan instead of 0."""

EXPECT = r"right side"
SELECT = "non_finite_scores"
TASK = "ch06a.3"

EDITS = [
    (
        "    losses = torch.clamp(1 - y.to(scores.dtype) * scores, min=0)\n",
        "    margin = 1 - y.to(scores.dtype) * scores\n"
        "    losses = margin * (margin > 0).to(scores.dtype)\n",
    )
]
