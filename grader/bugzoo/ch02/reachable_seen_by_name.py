"""Visited nodes are remembered by their name (node.name(), e.g. 'MulBackward0'), so the
second multiplication in a graph is taken for the first and never walked."""

EXPECT = r"same kind|names|next_functions"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    reached = set()
    if loss.grad_fn is None:
        if loss.requires_grad:
            reached.add(id(loss))
    else:
        seen, stack = set(), [loss.grad_fn]
        while stack:
            node = stack.pop()
            if node is None:
                continue
            leaf = getattr(node, "variable", None)
            if leaf is not None:
                reached.add(id(leaf))
                continue
            if node.name() in seen:
                continue
            seen.add(node.name())
            stack.extend(nxt for nxt, _ in node.next_functions)
    return {name: id(p) in reached for name, p in pairs}
