"""Gradients are "a training-time thing", so the model is switched to training mode first
and left there: an eval-mode model's BatchNorm then normalises by each micro-batch's
statistics (not the full-batch gradient), updates its running statistics, and the caller
gets its model back in training mode."""

EXPECT = r"evaluation to training|eval mode"
SELECT = "accumulated"
EDITS = [
    (
        "    model.zero_grad(set_to_none=True)",
        "    model.train()\n    model.zero_grad(set_to_none=True)",
    )
]
