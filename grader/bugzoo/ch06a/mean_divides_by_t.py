"""Padding is zeroed but the sum is divided by T, the padded length, so short
sequences get pulled toward 0."""

EXPECT = r"not by T|valid positions"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype)).sum(dim=dim) / x.shape[dim]
