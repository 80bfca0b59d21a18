"""An op that returns several tensors (torch.max with dim, torch.split) has only its
first output recorded."""

EXPECT = r"each output|each one recorded"
SELECT = "trace_shapes"


class _ShapeRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.trace = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        first = out[0] if isinstance(out, (tuple, list)) else out
        if isinstance(first, torch.Tensor):
            self.trace.append((getattr(func, "__name__", str(func)), tuple(first.shape)))
        return out
