"""Training mode for the backward passes, the caller's mode put back at the end: the mode
comes back right, but BatchNorm normalised by each micro-batch's statistics (not the
eval-mode full-batch gradient) and updated its running statistics on the way."""

EXPECT = r"running|buffer|eval mode"
SELECT = "accumulated"
EDITS = [
    (
        "    model.zero_grad(set_to_none=True)",
        "    was_training = model.training\n    model.train()\n    model.zero_grad(set_to_none=True)",
    ),
    (
        "    return {\n        name: (p.grad.clone()",
        "    model.train(was_training)\n    return {\n        name: (p.grad.clone()",
    ),
]
