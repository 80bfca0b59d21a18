"""Follows the usual training-loop recipe to the end: after accumulating, it takes an SGD
step. The returned gradient is right, but the caller's model has moved."""

EXPECT = r"does not take a step|changed its argument `model`"
SELECT = "accumulated"
EDITS = [
    (
        "    return {\n        name: (p.grad.clone()",
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        "            if p.grad is not None:\n"
        "                p -= 0.1 * p.grad\n"
        "    return {\n        name: (p.grad.clone()",
    )
]
