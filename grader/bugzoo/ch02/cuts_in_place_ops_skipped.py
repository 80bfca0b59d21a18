"""find_graph_cuts skips every in-place op (a method named ``xxx_``), reading "an in-place
update of a leaf under no_grad is not a cut" as "in-place ops are never cuts": the
optimizer step stays silent, but so do ``h.detach_()`` and a leaf's
``requires_grad_(False)``, which end the gradient path as detach does."""

EXPECT = r"in place|moment the op took it"
SELECT = "find_graph_cuts"
TASK = "ch02.2"
EDITS = [
    (
        "        if took_grad:\n",
        "        name = _op_name(func)\n"
        '        if took_grad and not (name.endswith("_") and not name.startswith("_")):\n',
    )
]
