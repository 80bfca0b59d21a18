"""reduction "mean" divides the sum by the length of the first axis (len(losses)), with 1 for a
0-d score: right for [N] and [N, 1] scores, K times too large for [N, K] ones, where torch's
mean is over every element."""

EXPECT = r"divided by the first axis"
SELECT = "every_shape_over"
EDITS = [
    (
        "        return losses.mean()\n",
        "        return losses.sum() / (losses.shape[0] if losses.dim() else 1)\n",
    )
]
