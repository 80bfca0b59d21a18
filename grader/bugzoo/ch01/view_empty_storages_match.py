"""Compares untyped_storage().data_ptr() alone: right for every storage that holds bytes,
but every empty storage reports address 0, so two unrelated empty tensors "share memory"."""

EXPECT = r"address 0"
SELECT = "is_view_of"


def is_view_of(a, b):
    return a.device == b.device and (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    )
