"""The rule is not applied by hand: torch.broadcast_shapes computes the shape and its
RuntimeError is re-raised as a ValueError. Every answer is right; the exercise is skipped."""

EXPECT = r"by hand|yourself"
SELECT = "by_hand"


def broadcast_shape(a, b):
    try:
        return tuple(torch.broadcast_shapes(tuple(a), tuple(b)))
    except RuntimeError as exc:
        raise ValueError(f"cannot broadcast along a dimension: {exc}") from None
