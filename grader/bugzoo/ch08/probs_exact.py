"""Probability rows are recognised only when they sum to exactly 1: float32 softmax rows
rarely do, so a softmax fed to cross_entropy goes unreported."""

EXPECT = r"rounding|tolerance"
SELECT = "probabilities or softmax"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        "        if (outputs >= 0).all() and bool((rows == 1).all()):\n",
    ),
]
