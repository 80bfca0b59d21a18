"""A recursive walk: correct on small graphs, a RecursionError on a long chain of ops."""

EXPECT = r"recursion"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    reached, seen = set(), set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for nxt, _ in node.next_functions:
            visit(nxt)

    try:
        visit(loss.grad_fn)
    except RecursionError:
        pass
    return {name: id(p) in reached for name, p in pairs}
