"""Each dimension takes the larger size without checking that the sizes agree, so
(5, 3) and (4,) 'broadcast' to (5, 4) instead of raising."""

EXPECT = r"ValueError|cannot broadcast"
SELECT = "broadcast"


def broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    return tuple(max(sa, sb) for sa, sb in zip(a, b))
