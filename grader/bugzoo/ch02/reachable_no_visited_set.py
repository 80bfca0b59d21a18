"""An explicit stack but no set of visited nodes: right on trees and chains, but a node
reached by two paths is walked again for each, so residual blocks take 2**depth steps."""

EXPECT = r"timeout|did not return|did not finish"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    reached = set()
    if loss.grad_fn is None:
        if loss.requires_grad:
            reached.add(id(loss))
    else:
        stack = [loss.grad_fn]
        while stack:
            node = stack.pop()
            if node is None:
                continue
            leaf = getattr(node, "variable", None)
            if leaf is not None:
                reached.add(id(leaf))
            stack.extend(nxt for nxt, _ in node.next_functions)
    return {name: id(p) in reached for name, p in pairs}
