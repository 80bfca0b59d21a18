"""Rows of log-probabilities (entries <= 0 whose exp sums to 1) are reported as
probabilities_as_logits too, as if a model ending in log_softmax fed cross_entropy wrongly
(held-out round 15): cross_entropy of log-probabilities is legal, since log_softmax leaves
them as they are, and the finding is for non-negative rows summing to 1 only."""

EXPECT = r"entry is <= 0"
SELECT = "probabilities"
TASK = "ch08.2"

EDITS = [
    (
        "        if (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4):\n",
        """\
        log_rows = outputs.exp().sum(dim=1)
        probs = (outputs >= 0).all() and torch.allclose(rows, torch.ones_like(rows), atol=1e-4)
        logp = (outputs <= 0).all() and torch.allclose(log_rows, torch.ones_like(rows), atol=1e-4)
        if probs or logp:
""",
    ),
]
