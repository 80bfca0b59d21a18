"""broadcast_shape asks torch's private reference implementation (torch._refs) for the
shape: plain Python over the sizes, so no tensor is built and no torch call is seen, but
the rule is torch's, not applied by hand."""

EXPECT = r"as written.*torch\._refs\._broadcast_shapes"
SELECT = "by_hand"

import torch._refs  # noqa: E402


def broadcast_shape(a, b):
    try:
        return tuple(int(s) for s in torch._refs._broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError as exc:
        raise ValueError(f"cannot broadcast along a dimension: {exc}") from None
