"""cross_entropy calls PyTorch's loss kernel through a reference kept at import time, with
torch's function modes switched off: the test's swap, made after the import, and its
recorder never see the call. The value and gradient are the library's; nothing is by hand."""

EXPECT = r"as written.*torch\._C\._nn\.cross_entropy_loss"
SELECT = "by_hand"

_kept_loss = torch._C._nn.cross_entropy_loss


def cross_entropy(logits, targets):
    with torch._C.DisableTorchFunction():
        return _kept_loss(logits, targets, None, 1, -100, 0.0)
