"""is_leaf is read as 'a leaf autograd tracks': a tensor counts only if it requires grad or
already holds a .grad, so a constant (a mask, a frozen table), a leaf in PyTorch, is
reported as no leaf."""

EXPECT = r"constant that requires no grad is a leaf"
SELECT = "step_report"
TASK = "ch03.6"
EDITS = [
    (
        "                is_leaf=p.is_leaf,\n",
        "                is_leaf=p.is_leaf and (p.requires_grad or p.grad is not None),\n",
    )
]
