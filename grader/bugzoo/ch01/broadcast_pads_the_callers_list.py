"""Pads the shorter shape with leading 1s by inserting into it: right answers, but a list
passed in comes back longer."""

EXPECT = r"caller's list|changed its argument"
SELECT = "broadcast"


def broadcast_shape(a, b):
    a = a if isinstance(a, list) else list(a)
    b = b if isinstance(b, list) else list(b)
    while len(a) < len(b):
        a.insert(0, 1)
    while len(b) < len(a):
        b.insert(0, 1)
    out = []
    for i, (sa, sb) in enumerate(zip(a, b)):
        if sa == sb or sb == 1:
            out.append(int(sa))
        elif sa == 1:
            out.append(int(sb))
        else:
            raise ValueError(
                f"cannot broadcast: dimension {i - len(a)} has size {sa} in one shape and "
                f"{sb} in the other"
            )
    return tuple(out)
