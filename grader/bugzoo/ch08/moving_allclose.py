"""not_moving compares parameters with torch.allclose: a real but tiny move counts as
standing still."""

EXPECT = r"allclose|torch.equal"
SELECT = "not_moving"

EDITS = [
    (
        "and torch.equal(p.detach(), before[n]):",
        "and torch.allclose(p.detach(), before[n]):",
    ),
]
