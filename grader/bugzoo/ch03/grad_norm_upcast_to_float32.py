"""step_report's grad_norm upcasts every gradient to float32 before taking its norm (to keep
a float16 gradient's squares from overflowing): right for float16 and bfloat16, but a float64
gradient's norm is then rounded to float32's 7 digits, not the L2 norm of the tensor's .grad."""

EXPECT = r"float64"
SELECT = "step_report"
TASK = "ch03.6"
EDITS = [
    (
        "grad_norm=0.0 if grad is None else grad.norm().item(),",
        "grad_norm=0.0 if grad is None else grad.float().norm().item(),",
    )
]
