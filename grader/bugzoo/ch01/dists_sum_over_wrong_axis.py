"""The differences are broadcast correctly but summed over the y axis, not the feature
axis: shape (N, D), which looks right when M == D."""

EXPECT = r"axis|sum over features"
SELECT = "pairwise"


def pairwise_sq_dists(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(dim=1)
