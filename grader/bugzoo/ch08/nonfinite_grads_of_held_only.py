"""Held-out round 12 answer: the gradients are checked for inf and nan only on the
parameters the optimizer holds, so a parameter that requires grad but is not held (the very
one not_in_optimizer reports) can get an inf or nan gradient unseen."""

EXPECT = r"nonfinite found at .*whoever holds it"
SELECT = "nonfinite_gradients_and_parameters"
TASK = "ch08.2"

EDITS = [
    (
        "            if p.grad is not None:\n                got_grad.add(n)\n",
        "            if p.grad is not None and id(p) not in held_ids:\n"
        "                got_grad.add(n)\n"
        "            if p.grad is not None and id(p) in held_ids:\n"
        "                got_grad.add(n)\n",
    )
]
