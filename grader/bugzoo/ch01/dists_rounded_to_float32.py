"""The points are cast to float32 "to be safe", so float64 inputs come back as float32
distances that lost float64's digits."""

EXPECT = r"float64"
SELECT = "layout_and_dtype"


def pairwise_sq_dists(x, y):
    x, y = x.float(), y.float()
    diff = x[:, None, :] - y[None, :, :]
    return (diff**2).sum(dim=-1)
