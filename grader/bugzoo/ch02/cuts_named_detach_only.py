"""Only calls named detach count as cuts; no_grad regions and .item() go unnoticed."""

EXPECT = r"no_grad|item"
SELECT = "find_graph_cuts"


class _CutRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.cuts = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = _op_name(func)
        if name in ("detach", "data", "tolist", "tensor", "__float__"):
            inputs, _ = tree_flatten((args, kwargs or {}))
            if any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
                self.cuts.append(Cut(name, _user_location()))
        return out
