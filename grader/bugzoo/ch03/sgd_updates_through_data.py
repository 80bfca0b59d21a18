"""sgd_step writes through ``p.data`` instead of under ``torch.no_grad()``: the values are
right, but autograd's version counter never sees the parameters change, so a graph that
had saved one would silently use its new values."""

EXPECT = r"version counter"
SELECT = "skips_missing"
EDITS = [
    (
        "    with torch.no_grad():\n        for p in params.values():\n"
        "            if p.grad is not None:\n                p -= lr * p.grad\n",
        "    for p in params.values():\n        if p.grad is not None:\n"
        "            p.data -= lr * p.grad.data\n",
    )
]
