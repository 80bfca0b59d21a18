"""Shapes are lined up from the left (padding the shorter one at the end), so (2, 3)
against (3,) compares 2 with 3 instead of 3 with 3."""

EXPECT = r"from the right"
SELECT = "broadcast"


def broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = a + (1,) * (n - len(a))
    b = b + (1,) * (n - len(b))
    out = []
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa != sb and 1 not in (sa, sb):
            raise ValueError(f"dimension {i}: sizes {sa} and {sb} differ")
        out.append(max(sa, sb))
    return tuple(out)
