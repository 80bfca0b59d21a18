"""diagnose lists parameters with named_parameters(remove_duplicate=False), so a weight tied
across two modules is one finding per registration (not_in_optimizer, frozen, no_grad twice)."""

EXPECT = r"tied parameter is one parameter"
TASK = "ch08.2"

EDITS = [
    (
        "    named = dict(model.named_parameters())\n",
        "    named = dict(model.named_parameters(remove_duplicate=False))\n",
    )
]
