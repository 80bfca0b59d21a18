"""step_report's grad_norm is the square root of the gradient's dot product with itself,
taken in the gradient's dtype: a float16 gradient whose entries' squares overflow or
underflow float16 reports inf or 0, though its L2 norm fits float16."""

EXPECT = r"precision in which the squares are summed"
SELECT = "step_report"
EDITS = [
    (
        "grad_norm=0.0 if grad is None else grad.norm().item(),",
        "grad_norm=0.0 if grad is None else math.sqrt(torch.dot(grad.flatten(), "
        "grad.flatten()).item()),",
    )
]
