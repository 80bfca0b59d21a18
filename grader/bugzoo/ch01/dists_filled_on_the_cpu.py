"""Preallocates the distance matrix with torch.zeros on the default CPU and fills it row by
row: right on CPU inputs, but a CUDA batch cannot be written into it."""

EXPECT = r"meta"
SELECT = "stays_on"
TASK = "ch01.2"


def pairwise_sq_dists(x, y):
    out = torch.zeros(x.shape[0], y.shape[0], dtype=x.dtype)
    for i in range(x.shape[0]):
        out[i] = ((x[i] - y) ** 2).sum(dim=-1)
    return out
