"""Only torch.* functions are wrapped (monkeypatching the torch namespace), so
operators and Tensor methods such as x @ w, x.view and x.sum go unrecorded."""

EXPECT = r"operators|methods"
SELECT = "trace_shapes"


def trace_shapes(fn, *args):
    trace = []
    names = ["matmul", "softmax", "exp", "sum", "zeros", "max", "transpose", "sub", "add", "mul"]
    saved = {n: getattr(torch, n) for n in names}

    def wrap(n, f):
        def inner(*a, **k):
            out = f(*a, **k)
            if isinstance(out, torch.Tensor):
                trace.append((n, tuple(out.shape)))
            return out

        return inner

    for n in names:
        setattr(torch, n, wrap(n, saved[n]))
    try:
        fn(*args)
    except Exception:
        pass
    finally:
        for n in names:
            setattr(torch, n, saved[n])
    return trace
