"""Probability rows are judged by the magnitudes of their entries (each row's absolute
values sum to 1), so rows of negated probabilities, entries <= 0, are reported as
probabilities_as_logits: the finding is for non-negative rows summing to 1 only."""

EXPECT = r"entry is <= 0"
SELECT = "probabilities"
TASK = "ch08.2"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        """\
        rows = outputs.abs().sum(dim=1)
        if torch.allclose(rows, torch.ones_like(rows), atol=1e-4):
""",
    ),
]
