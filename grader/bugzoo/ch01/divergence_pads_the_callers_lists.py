"""Pads the shorter of the two lists so that zip sees every position: right answers, and
the caller's trace or expected shapes come back longer."""

EXPECT = r"padding|changed its argument"
SELECT = "divergence"


def first_divergence(trace, expected):
    trace = trace if isinstance(trace, list) else list(trace)
    expected = expected if isinstance(expected, list) else list(expected)
    while len(trace) < len(expected):
        trace.append(("<missing>", None))
    while len(expected) < len(trace):
        expected.append(None)
    for i, (entry, want) in enumerate(zip(trace, expected)):
        if isinstance(want, (tuple, list)) and len(want) == 2 and isinstance(want[0], str):
            want = want[1]
        if entry[1] is None or want is None or tuple(entry[1]) != tuple(want):
            return i
    return None
