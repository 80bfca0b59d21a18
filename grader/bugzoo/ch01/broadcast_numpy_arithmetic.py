"""broadcast_shape adds two empty numpy arrays and reads the shape of the sum: numpy's
arithmetic broadcasts for it, and numpy arithmetic is no torch call for the test to see."""

EXPECT = r"as written.*numpy\.zeros"
SELECT = "by_hand"

import numpy as _np  # noqa: E402


def broadcast_shape(a, b):
    try:
        return tuple(int(s) for s in (_np.zeros(tuple(a), bool) | _np.zeros(tuple(b), bool)).shape)
    except ValueError as exc:
        raise ValueError(f"cannot broadcast along a dimension: {exc}") from None
