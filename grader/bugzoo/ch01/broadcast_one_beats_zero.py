"""Compatible sizes are combined with max(), so a size-1 dimension against a size-0
one gives 1; broadcasting stretches the 1 to 0."""

EXPECT = r"including 0|even to 0"
SELECT = "broadcast"


def broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa != sb and 1 not in (sa, sb):
            raise ValueError(f"cannot broadcast dimension {i - n}: sizes {sa} and {sb}")
        out.append(max(sa, sb))
    return tuple(out)
