"""optimizer_coverage builds each name module by module (``named_parameters(recurse=False)``
of every submodule), so a weight tied between two modules is listed once per owner
(held-out round 12)."""

EXPECT = r"tied parameter is one tensor"
TASK = "ch04.3"
SELECT = "coverage"
EDITS = [
    (
        "    missing = [\n"
        "        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in owned\n"
        "    ]\n",
        "    missing = []\n"
        "    for prefix, module in model.named_modules():\n"
        "        for name, p in module.named_parameters(recurse=False):\n"
        "            if p.requires_grad and id(p) not in owned:\n"
        '                missing.append(f"{prefix}.{name}" if prefix else name)\n',
    )
]
