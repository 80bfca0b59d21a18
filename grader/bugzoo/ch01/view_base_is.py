"""Checks a._base is b: misses views of views (whose _base is the root), the base
itself, and detached tensors."""

EXPECT = r"storage|_base"
SELECT = "is_view_of"


def is_view_of(a, b):
    return a is b or a._base is b or (a._base is not None and a._base is b._base)
