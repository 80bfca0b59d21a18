"""torch.cdist returns Euclidean distances, not their squares."""

EXPECT = r"square|sum over features"
SELECT = "pairwise"


def pairwise_sq_dists(x, y):
    return torch.cdist(x, y)
