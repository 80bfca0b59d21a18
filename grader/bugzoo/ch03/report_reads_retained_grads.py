"""step_report reads .grad of a non-leaf that retains its grad, so such a tensor is reported
with a gradient although the update never uses one."""

EXPECT = r"retain"
SELECT = "non_leaves"
EDITS = [
    (
        "        grad = p.grad if p.is_leaf else None",
        "        grad = p.grad if (p.is_leaf or p.retains_grad) else None",
    )
]
