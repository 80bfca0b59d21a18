"""Probability rows are recognised by their sums rounded to two decimals: a float32 softmax
row that misses 1 by a rounding step is still recognised, but so is a softmax scaled by
0.998 or 1.004, whose rows miss 1 by far more than float rounding."""

EXPECT = r"rounding size|fraction of a percent"
SELECT = "probabilities"
TASK = "ch08.2"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        "        if (outputs >= 0).all() and bool((torch.round(rows, decimals=2) == 1).all()):\n",
    ),
]
