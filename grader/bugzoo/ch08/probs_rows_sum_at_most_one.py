"""Probability rows are taken to be non-negative rows that sum to at most 1 (as if some
mass could sit on classes left out): a softmax scaled down or cut short, a sigmoid head
over few classes, is reported as probabilities fed to cross_entropy."""

EXPECT = r"every row's own sum must be 1"
SELECT = "probabilities"
TASK = "ch08.2"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        "        if (outputs >= 0).all() and bool((rows <= 1 + 1e-4).all()):\n",
    ),
]
