"""Gives x and y their broadcast axes with unsqueeze_, in place: the distances are right,
and the caller's x and y come back with an extra dimension."""

EXPECT = r"in-place|unsqueeze_|changed its argument"
SELECT = "dists"


def pairwise_sq_dists(x, y):
    x.unsqueeze_(1)  # (N, 1, D)
    y.unsqueeze_(0)  # (1, M, D)
    return ((x - y) ** 2).sum(dim=-1)
