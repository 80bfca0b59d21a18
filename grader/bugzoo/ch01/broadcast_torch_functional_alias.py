"""broadcast_shape calls torch.functional.broadcast_shapes, the function torch re-exports as
torch.broadcast_shapes: the test replaces the re-export only, and this routine works on the
sizes without building a tensor, so no torch call is seen."""

EXPECT = r"as written.*torch\.functional\.broadcast_shapes"
SELECT = "by_hand"

import torch.functional as _tf  # noqa: E402


def broadcast_shape(a, b):
    try:
        return tuple(int(s) for s in _tf.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError as exc:
        raise ValueError(f"cannot broadcast along a dimension: {exc}") from None
