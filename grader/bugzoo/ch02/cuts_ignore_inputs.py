"""Every op whose floating result does not require grad is called a cut, even when none
of its inputs ever required grad."""

EXPECT = r"clean|never required grad|input that required grad"
SELECT = "find_graph_cuts"


class _CutRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.cuts = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = _op_name(func)
        outputs = out if isinstance(out, (list, tuple)) else [out]
        if (
            _carries_values(out)
            and not _shape_only(name)
            and not any(isinstance(o, Tensor) and o.requires_grad for o in outputs)
        ):
            self.cuts.append(Cut(name, _user_location()))
        return out
