"""A (name, shape) pair is recognised only when it is a tuple: the same pair written as a
list, as a trace saved to JSON comes back, is compared as if it were a shape."""

EXPECT = r"whatever its container"
SELECT = "first_divergence"


def first_divergence(trace, expected):
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if type(want) is tuple and len(want) == 2 and isinstance(want[0], str):
            want = want[1]
        if tuple(entry[1]) != tuple(want):
            return i
    if len(trace) != len(expected):
        return min(len(trace), len(expected))
    return None
