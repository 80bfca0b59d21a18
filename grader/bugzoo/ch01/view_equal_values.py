"""Judges by values: a copy with equal values counts as a view, a view of different
dtype does not."""

EXPECT = r"copy|separate memory|equal values"
SELECT = "is_view_of"


def is_view_of(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
