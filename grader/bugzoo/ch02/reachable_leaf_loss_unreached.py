"""A loss without grad_fn is taken to reach nothing, even when the loss is itself a
parameter (a leaf that requires grad), whose gradient d loss / d loss is 1."""

EXPECT = r"itself a parameter"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    reached, seen, stack = set(), set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        leaf = getattr(node, "variable", None)
        if leaf is not None:
            reached.add(id(leaf))
        stack.extend(nxt for nxt, _ in node.next_functions)
    return {name: id(p) in reached for name, p in pairs}
