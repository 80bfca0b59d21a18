"""A Python number that a Tensor method hands back (``x.item()``, ``float(x)``, ``x.dim()``,
``len(x)``) is recorded as a 0-d result, shape ``()``: "a scalar read from a tensor is the
tensor's 0-d value". It produced no tensor, so it has no entry."""

EXPECT = r"produced no tensor"
SELECT = "trace_shapes"
TASK = "ch01.4"

EDITS = [
    (
        "        for o in _tensors_in(out):\n",
        "        if isinstance(out, (int, float)):  # a scalar result: 0-d\n"
        "            self.trace.append((name, ()))\n"
        "        for o in _tensors_in(out):\n",
    )
]
