"""optimizer_coverage walks the model's direct parameters and then each child's
``named_parameters()`` on its own, so a weight tied between two children (or between the
model and a child) is met afresh in each walk and listed twice; a tie inside one child is
named once."""

EXPECT = r"tied parameter is one tensor"
TASK = "ch04.3"
SELECT = "coverage"
EDITS = [
    (
        "    missing = [\n"
        "        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in owned\n"
        "    ]\n",
        '    walks = [("", model.named_parameters(recurse=False))] + [\n'
        '        (f"{c}.", child.named_parameters()) for c, child in model.named_children()\n'
        "    ]\n"
        "    missing = [\n"
        "        prefix + name\n"
        "        for prefix, walk in walks\n"
        "        for name, p in walk\n"
        "        if p.requires_grad and id(p) not in owned\n"
        "    ]\n",
    )
]
