"""find_graph_cuts asks whether an input required grad after the op has run, so an op
that ends its own input's gradient path in place (``h.detach_()``, a leaf's
``requires_grad_(False)``) looks as if it never took a tensor requiring grad and is
never reported."""

EXPECT = r"in place|moment the op took it"
SELECT = "find_graph_cuts"
TASK = "ch02.2"
EDITS = [
    (
        "        took_grad = any(isinstance(t, Tensor) and t.requires_grad for t in inputs)\n"
        "        out = func(*args, **kwargs)\n",
        "        out = func(*args, **kwargs)\n"
        "        took_grad = any(isinstance(t, Tensor) and t.requires_grad for t in inputs)\n",
    )
]
