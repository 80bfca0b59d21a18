"""Returns the last mismatching op, where the program finally looks wrong, instead of
the first, where it became wrong."""

EXPECT = r"first"
SELECT = "first_divergence"


def first_divergence(trace, expected):
    found = None
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if isinstance(want, (tuple, list)) and len(want) == 2 and isinstance(want[0], str):
            want = want[1]
        if tuple(entry[1]) != tuple(want):
            found = i
    if found is None and len(trace) != len(expected):
        return min(len(trace), len(expected))
    return found
