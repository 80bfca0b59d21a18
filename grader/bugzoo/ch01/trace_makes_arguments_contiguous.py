"""trace_shapes gives fn each tensor argument made contiguous, which is the caller's own
tensor only when it already was: for a transposed or strided argument fn gets a copy, so
its in-place edits never reach the caller's tensor (and its backward still does)."""

EXPECT = r"(transposed|strided).*in-place edit .* did not reach the caller"
SELECT = "trace_shapes_on_another"
TASK = "ch01.4"
EDITS = [
    (
        "    recorder = _ShapeRecorder()\n",
        "    recorder = _ShapeRecorder()\n"
        "    args = tuple(a.contiguous() if isinstance(a, torch.Tensor) else a for a in args)\n",
    )
]
