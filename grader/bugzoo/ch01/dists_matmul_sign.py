"""The matmul form with the cross term's sign flipped: |x|^2 + |y|^2 + 2 x.y."""

EXPECT = r"sign of the cross term|sum over features"
SELECT = "pairwise"


def pairwise_sq_dists(x, y):
    return (x**2).sum(1)[:, None] + (y**2).sum(1)[None, :] + 2 * x @ y.T
