"""Only the loss's direct inputs are inspected, so a parameter two operations down is
reported unreachable."""

EXPECT = r"next_functions|levels|deep"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    direct = set()
    if loss.grad_fn is not None:
        for node, _ in loss.grad_fn.next_functions:
            if node is not None and hasattr(node, "variable"):
                direct.add(id(node.variable))
    return {name: id(p) in direct for name, p in pairs}
