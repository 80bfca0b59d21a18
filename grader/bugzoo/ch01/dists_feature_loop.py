"""Sums the squared differences feature by feature with Python's sum: with no features
(D = 0) the empty sum is the int 0, not an [N, M] matrix of zeros."""

EXPECT = r"D = 0|another type than its contract declares"
SELECT = "empty_side"
TASK = "ch01.2"


def pairwise_sq_dists(x, y):
    return sum((x[:, None, k] - y[None, :, k]) ** 2 for k in range(x.shape[1]))
