"""Divides by the number of valid positions without guarding 0: an all-padding row
becomes 0 / 0 = nan."""

EXPECT = r"nan|0 / 0"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    total = torch.where(keep, x, torch.zeros((), dtype=x.dtype)).sum(dim=dim)
    return total / keep.sum(dim=dim).to(x.dtype)
