"""Sums everything, then subtracts the padding's sum: exact on paper, but huge padding
swamps the float32 sum and the valid part is lost to rounding."""

EXPECT = r"padding|never enter"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    pad = torch.where(keep, torch.zeros((), dtype=x.dtype), x)
    count = keep.sum(dim=dim).clamp(min=1).to(x.dtype)
    return (x.sum(dim=dim) - pad.sum(dim=dim)) / count
