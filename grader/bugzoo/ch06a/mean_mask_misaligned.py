"""mask[B, T] is multiplied into x[B, T, E] without a trailing axis, so it lines up
with (T, E) from the right; legal when B == T == E, and the positions are wrong."""

EXPECT = r"trailing axis|lines up|valid positions"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    m = mask.to(x.dtype)
    return (x * m).sum(dim=dim) / m.sum(dim=-1, keepdim=x.dim() > m.dim()).clamp(min=1)
