"""Reachability read off the gradients of a real backward pass: it consumes the graph
and runs the very computation the diagnostic should avoid."""

EXPECT = r"backward"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    if loss.grad_fn is None:
        return {name: False for name, _ in pairs}
    loss.backward()
    found = {name: p.grad is not None for name, p in pairs}
    for _, p in pairs:
        p.grad = None
    return found
