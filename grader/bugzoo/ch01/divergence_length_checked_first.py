"""The lengths are compared before the shapes, so when one list is shorter the answer is
always where it ends, even if an earlier op already had the wrong shape."""

EXPECT = r"first op whose shape differs"
SELECT = "first_divergence"


def first_divergence(trace, expected):
    if len(trace) != len(expected):
        return min(len(trace), len(expected))
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if isinstance(want, (tuple, list)) and len(want) == 2 and isinstance(want[0], str):
            want = want[1]
        if tuple(entry[1]) != tuple(want):
            return i
    return None
