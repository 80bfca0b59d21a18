"""Probability rows are judged on the first output row alone: a batch whose first row
is a distribution and whose other rows are not is reported, and the reverse is missed."""

EXPECT = r"every row|all rows"
SELECT = "probabilities"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        "        if (outputs[0] >= 0).all() and abs(float(rows[0]) - 1.0) <= 1e-4:\n",
    ),
]
