"""zip() stops at the shorter list, so a program that died before its expected ops
ran is reported as agreeing everywhere (None)."""

EXPECT = r"shorter|zip"
SELECT = "first_divergence"


def first_divergence(trace, expected):
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if isinstance(want, (tuple, list)) and len(want) == 2 and isinstance(want[0], str):
            want = want[1]
        if tuple(entry[1]) != tuple(want):
            return i
    return None
