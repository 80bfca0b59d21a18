"""optimizer_coverage treats a param group with learning rate 0 as not holding its tensors
("an lr of 0 never moves them"), so the model's tensors there are reported missing and a
stray tensor there is not counted as foreign. A group's settings say how its tensors are
updated, not which tensors the optimizer holds. (Held-out round 14.)"""

EXPECT = r"whatever its settings"
SELECT = "coverage"
TASK = "ch04.3"

EDITS = [
    (
        '    owned = {id(p) for group in optimizer.param_groups for p in group["params"]}\n',
        "    owned = {\n"
        '        id(p) for group in optimizer.param_groups if group["lr"] != 0 for p in group["params"]\n'
        "    }\n",
    )
]
