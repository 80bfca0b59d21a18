"""broadcast_shape lets numpy broadcast two zero-stride arrays, through np.broadcast and
as_strided kept at import time: the test switches numpy's routines off after the import,
and numpy calls are no torch calls, so nothing was seen. No rule is applied by hand."""

EXPECT = r"as written.*numpy\.broadcast"
SELECT = "by_hand"

import numpy as _np  # noqa: E402

_kept_broadcast = _np.broadcast
_kept_strided = _np.lib.stride_tricks.as_strided


def broadcast_shape(a, b):
    x = _kept_strided(_np.zeros(1), shape=tuple(a), strides=(0,) * len(a))
    y = _kept_strided(_np.zeros(1), shape=tuple(b), strides=(0,) * len(b))
    try:
        return tuple(int(s) for s in _kept_broadcast(x, y).shape)
    except ValueError as exc:
        raise ValueError(f"cannot broadcast along a dimension: {exc}") from None
