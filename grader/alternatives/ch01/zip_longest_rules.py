"""broadcast_shape and first_divergence walk their sequences with itertools.zip_longest
(from the right, with a fill value, for the shapes; from the left with a sentinel for the
traces) instead of padding lists or comparing lengths: the same rules, another walk."""

import itertools  # noqa: E402

_MISSING = object()


def broadcast_shape(a, b):
    out = []
    for i, (x, y) in enumerate(
        itertools.zip_longest(reversed(list(a)), reversed(list(b)), fillvalue=1)
    ):
        x, y = int(x), int(y)
        if x != y and 1 not in (x, y):
            dim = max(len(a), len(b)) - 1 - i
            raise ValueError(f"dimension {dim}: size {x} and size {y} cannot be broadcast")
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def first_divergence(trace, expected):
    def shape_of(entry):
        if isinstance(entry, tuple | list) and len(entry) == 2 and isinstance(entry[0], str):
            entry = entry[1]
        return tuple(int(s) for s in entry)

    for i, (got, want) in enumerate(itertools.zip_longest(trace, expected, fillvalue=_MISSING)):
        if got is _MISSING or want is _MISSING or shape_of(got) != shape_of(want):
            return i
    return None
