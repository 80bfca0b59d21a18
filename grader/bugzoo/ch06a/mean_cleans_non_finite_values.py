"""Cleans x with nan_to_num before pooling: padding no longer matters, but an inf or nan
at a VALID position silently becomes 0 instead of reaching the mean."""

EXPECT = r"valid position.*(nan|inf)|nan_to_num|isfinite"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    dim = dim % x.dim()
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    clean = torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    total = torch.where(keep, clean, torch.zeros((), dtype=x.dtype)).sum(dim=dim)
    return total / keep.sum(dim=dim).clamp(min=1).to(x.dtype)
