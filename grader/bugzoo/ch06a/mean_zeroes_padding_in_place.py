"""Zeroes the caller's padding in place (masked_fill_) before summing: the mean is right,
the input tensor is silently changed."""

EXPECT = r"modified the tensor|in place|changed its argument `x`"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    dim = dim % x.dim()
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    x = x.masked_fill(~keep, 0) if x.requires_grad else x.masked_fill_(~keep, 0)
    return x.sum(dim) / keep.sum(dim).clamp(min=1).to(x.dtype)
