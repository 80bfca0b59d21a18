"""Only the first argument (``self`` for a method) is checked for requires_grad, so a
no_grad op whose tracked tensor is a later argument (``x @ w``) goes unreported."""

EXPECT = r"whichever argument"
SELECT = "find_graph_cuts"


class _CutRecorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.cuts = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        first = args[0] if args else None
        if isinstance(first, Tensor) and first.requires_grad:
            name = _op_name(func)
            outputs = out if isinstance(out, (list, tuple)) else [out]
            keeps_path = any(isinstance(o, Tensor) and o.requires_grad for o in outputs)
            if not keeps_path and _carries_values(out) and not _shape_only(name):
                self.cuts.append(Cut(name, _user_location()))
        return out
