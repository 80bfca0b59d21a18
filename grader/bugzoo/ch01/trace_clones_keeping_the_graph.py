"""trace_shapes hands fn clones of the tensor arguments, kept on the graph so that a
backward inside fn still reaches the caller's leaves; fn's in-place edits land in the
clones and never reach the caller's tensors, as they would if fn(*args) were called."""

EXPECT = r"in-place edit .* did not reach the caller"
SELECT = "trace_shapes_on_another"
TASK = "ch01.4"
EDITS = [
    (
        "    recorder = _ShapeRecorder()\n",
        "    recorder = _ShapeRecorder()\n"
        "    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)\n",
    )
]
