"""Compares data_ptr(), the address of each tensor's first element: views with an
offset such as x[1:] look like separate memory."""

EXPECT = r"storage"
SELECT = "is_view_of"


def is_view_of(a, b):
    return a.data_ptr() == b.data_ptr()
