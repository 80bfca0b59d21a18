"""optimizer_coverage skips param groups whose learning rate is too small to move a float32
weight (below 1e-6: "effectively frozen"), so a group with a tiny learning rate, a warm-up
schedule's first steps, looks as if it held nothing. Any group holds its tensors, whatever
its settings."""

EXPECT = r"whatever its settings"
SELECT = "coverage"
TASK = "ch04.3"

EDITS = [
    (
        '    owned = {id(p) for group in optimizer.param_groups for p in group["params"]}\n',
        "    owned = {\n"
        '        id(p) for group in optimizer.param_groups if group["lr"] >= 1e-6 for p in group["params"]\n'
        "    }\n",
    )
]
