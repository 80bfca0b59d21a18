"""Settles the empty case by saying no: a tensor without elements is never a view, so
e.t() of an empty e and an empty slice x[2:2] of x are reported as copies."""

EXPECT = r"empty"
SELECT = "is_view_of"


def is_view_of(a, b):
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.device == b.device and (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    )
