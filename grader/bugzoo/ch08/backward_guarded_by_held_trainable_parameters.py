"""Backward is guarded by whether the optimizer holds a parameter that requires grad: a
model whose parameters all train but whose forward leaves its output without a graph (under
no_grad, or detached) makes diagnose raise instead of reporting no_grad for them."""

EXPECT = r"without a graph"
SELECT = "no_grad_means"
TASK = "ch08.2"

EDITS = [
    (
        "        if loss.requires_grad:  # with everything frozen there is nothing to backpropagate\n",
        "        if any(p.requires_grad for p in held):  # the optimizer has something to train\n",
    ),
]
