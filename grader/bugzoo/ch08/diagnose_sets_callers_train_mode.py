"""diagnose switches the caller's model to training mode before copying it, and never puts
it back: a model the caller had in eval mode comes back in training mode."""

EXPECT = r"from evaluation to training mode"
SELECT = "used_caller"

EDITS = [
    (
        "    model, optimizer = copy.deepcopy((model, optimizer))",
        "    model.train()\n    model, optimizer = copy.deepcopy((model, optimizer))",
    )
]
