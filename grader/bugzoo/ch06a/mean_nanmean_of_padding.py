"""Marks padding as nan and takes nanmean: padding is skipped, but so is a nan at a VALID
position (nanmean cannot tell the two apart), so a real nan never reaches the result."""

EXPECT = r"valid position.*nan|nanmean|nansum"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    dim = dim % x.dim()
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    marked = torch.where(keep, x, torch.full((), float("nan"), dtype=x.dtype))
    out = marked.nanmean(dim=dim)
    empty = ~keep.any(dim=dim)
    return torch.where(empty, torch.zeros((), dtype=x.dtype), out)
