"""Mean squared error only for float32 targets: float64 (or float16, bfloat16) targets go
to cross-entropy, which reads them as soft class probabilities."""

EXPECT = r"any width"
SELECT = "regression_targets"

EDITS = [
    (
        "    loss_fn = F.mse_loss if y.is_floating_point() else F.cross_entropy\n",
        "    loss_fn = F.mse_loss if y.dtype == torch.float32 else F.cross_entropy\n",
    ),
]
