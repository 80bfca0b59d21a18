"""Leaves are matched to parameters by value (torch.equal), so a parameter that merely
holds the same numbers as a reachable one is reported reachable."""

EXPECT = r"identity"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    leaves, seen, stack = [], set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            leaves.append(node.variable)
        stack.extend(n for n, _ in node.next_functions)
    return {
        name: any(p.shape == v.shape and torch.equal(p, v) for v in leaves) for name, p in pairs
    }
