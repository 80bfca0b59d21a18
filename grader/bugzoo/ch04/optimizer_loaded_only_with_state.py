"""load_checkpoint restores the optimizer only when the saved state_dict holds some
per-parameter state ("nothing to restore before a first step"): a checkpoint of an
optimizer that has not stepped yet leaves the loading optimizer with its own learning
rates, momenta and weight decays, so training after the reload takes other steps."""

EXPECT = r"param_groups|whenever an optimizer is given"
SELECT = "checkpoint"
TASK = "ch04.5"

EDITS = [
    (
        '        optimizer.load_state_dict(checkpoint["optimizer"])\n',
        '        if checkpoint["optimizer"]["state"]:  # nothing to restore before a first step\n'
        '            optimizer.load_state_dict(checkpoint["optimizer"])\n',
    )
]
