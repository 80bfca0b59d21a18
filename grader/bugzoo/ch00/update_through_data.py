"""The update writes through ``w.data`` instead of under ``torch.no_grad()``: the values are
the same, but autograd's version counter never sees w change, so a graph that had saved w
would silently use the new value."""

EXPECT = r"version counter|\.data"
SELECT = "autograd_can_see"
EDITS = [
    (
        "        with torch.no_grad():\n            w -= lr * w.grad\n",
        "        w.data -= lr * w.grad.data\n",
    )
]
