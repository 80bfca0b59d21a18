"""Reads a (height, width) pair only from a tuple: a list pair, which nn.Conv2d accepts, is
taken for a single int."""

EXPECT = r"lists|list"
SELECT = "pairs"


def _pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, tuple) else (v, v)
