"""The valid values are added up position by position in a Python loop (the built-in sum of
each position's masked values along dim): a row of no positions adds up nothing, so the sum is
the int 0 and the result loses the axes after dim, though a row with no valid position gives
0 for each of its features, whatever the reason it has none."""

EXPECT = r"no positions|no valid"
TASK = "ch06a.1"


def masked_mean(x, mask, dim):
    dim = dim % x.dim()
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))
    zero = torch.zeros((), dtype=x.dtype)
    total = sum(torch.where(k, v, zero) for v, k in zip(x.movedim(dim, 0), keep.movedim(dim, 0)))
    count = keep.sum(dim=dim).clamp(min=1).to(x.dtype)
    return total / count
