"""A tensor attribute counts as registered when it shares a parameter's or buffer's memory,
so a view kept as a plain attribute (weight.t(), a buffer's .view) is never reported,
although state_dict() does not save it and .to() leaves it behind."""

EXPECT = r"view"
SELECT = "copies_by_identity"
EDITS = [
    (
        "        if id(value) not in registered:\n",
        "        if id(value) not in registered and not (\n"
        "            isinstance(value, Tensor) and value.untyped_storage().data_ptr() in registered\n"
        "        ):\n",
    ),
    (
        "    registered |= {id(b) for b in model.buffers()}\n",
        "    registered |= {id(b) for b in model.buffers()}\n"
        "    registered |= {t.untyped_storage().data_ptr() for t in [*model.parameters(), "
        "*model.buffers()]}\n",
    ),
]
