"""Only top-level arguments and keyword values are checked for requires_grad, so a no_grad
call whose tracked tensor sits inside a list (torch.stack([x, w]), torch.cat) is missed."""

EXPECT = r"item of a list|flatten|the same cuts"
SELECT = "find_graph_cuts"


class _CutRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.cuts = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = list(args) + list(kwargs.values())
        if any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
            name = _op_name(func)
            outputs = out if isinstance(out, (list, tuple)) else [out]
            keeps_path = any(isinstance(o, Tensor) and o.requires_grad for o in outputs)
            if not keeps_path and _carries_values(out) and not _shape_only(name):
                self.cuts.append(Cut(name, _user_location()))
        return out
