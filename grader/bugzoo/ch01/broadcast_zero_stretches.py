"""A size-0 dimension is treated like a size-1 one, so (2,) against (0,) 'broadcasts'
instead of raising: only 1 stretches."""

EXPECT = r"ValueError"
SELECT = "broadcast"


def broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa == 1 or (sa == 0 and sb != 1):
            out.append(sb if sa == 1 else sa)
        elif sb in (0, 1) or sa == sb:
            out.append(sb if sb == 0 else sa)
        else:
            raise ValueError(f"cannot broadcast dimension {i - n}: sizes {sa} and {sb}")
    return tuple(out)
