"""serve keeps the compiled model per id(model) across calls: a later call with another
backend runs graphs the first backend compiled, and never uses its own."""

EXPECT = r"backend it is given"
SELECT = "own_backend"

_SERVED = {}


def serve(model, requests, backend="eager"):
    compiled = _SERVED.get(id(model))
    if compiled is None:
        compiled = _SERVED[id(model)] = torch.compile(model, backend=backend, dynamic=None)
    with torch.no_grad():
        return [compiled(idx) for idx in requests]
