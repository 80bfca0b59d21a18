"""save_checkpoint saves the optimizer's state_dict only when the optimizer holds some
per-parameter state ("an optimizer that has not stepped yet has nothing worth saving"): a
checkpoint taken before the first step, or of plain SGD that keeps no state, loses the
param groups' settings, and loading it with an optimizer raises. (Held-out round 14.)"""

EXPECT = r"param_groups|whenever an optimizer is given"
SELECT = "checkpoint"
TASK = "ch04.5"

EDITS = [
    (
        '            "optimizer": None if optimizer is None else optimizer.state_dict(),\n',
        '            "optimizer": optimizer.state_dict()\n'
        "            if optimizer is not None and optimizer.state\n"
        "            else None,\n",
    )
]
