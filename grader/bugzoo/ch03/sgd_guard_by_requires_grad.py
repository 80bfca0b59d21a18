"""sgd_step also skips tensors that no longer require grad ("frozen tensors are not
trained"), so one frozen after its backward keeps its value although its .grad is not None
(held-out round 11)."""

EXPECT = r"requires_grad|frozen"
SELECT = "sgd_step"
TASK = "ch03.5"
EDITS = [
    (
        "            if p.grad is not None:\n                p -= lr * p.grad\n",
        "            if p.requires_grad and p.grad is not None:\n                p -= lr * p.grad\n",
    )
]
