"""The recorder notes the shape of each op's first tensor argument instead of its
output, so every entry is one step behind."""

EXPECT = r"output|every torch op"
SELECT = "trace_shapes"


class _ShapeRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.trace = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if first is not None:
            self.trace.append((getattr(func, "__name__", str(func)), tuple(first.shape)))
        return out
