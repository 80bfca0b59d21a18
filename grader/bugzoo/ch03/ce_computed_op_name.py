"""cross_entropy finds the loss operator by a name assembled at run time, in torch.ops, and
calls it with function modes off: no name the tests switch off, no call the recorder sees."""

EXPECT = r"as written.*(computed at run time|torch\.ops)"
SELECT = "by_hand"


def cross_entropy(logits, targets):
    name = "_".join(["cross", "entropy", "loss"])
    op = getattr(torch.ops.aten, name)
    with torch._C.DisableTorchFunction():
        return op(logits, targets, None, 1, -100, 0.0)
