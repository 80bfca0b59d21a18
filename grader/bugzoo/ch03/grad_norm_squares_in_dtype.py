"""step_report's grad_norm sums the squares of the gradient's entries in the gradient's own
dtype: a float16 gradient with entries above 256 reports inf (its squares overflow float16)
and one with entries near 1e-4 reports 0 (they underflow), though its L2 norm fits float16."""

EXPECT = r"precision in which the squares are summed"
SELECT = "step_report"
EDITS = [
    (
        "grad_norm=0.0 if grad is None else grad.norm().item(),",
        "grad_norm=0.0 if grad is None else grad.pow(2).sum().sqrt().item(),",
    )
]
