"""Zeroes the padding by multiplying with the mask: fine for finite padding, but
inf * 0 and nan * 0 are nan, so non-finite padding poisons the mean."""

EXPECT = r"inf \* 0|nan|torch.where"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    dim = dim % x.dim()
    m = mask.to(x.dtype)
    m = m.reshape(*m.shape, *([1] * (x.dim() - m.dim())))
    return (x * m).sum(dim) / m.sum(dim).clamp(min=1)
