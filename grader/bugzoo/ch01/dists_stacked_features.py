"""Stacks one [N, M] matrix of squared differences per feature and sums the stack: with no
features (D = 0) there is nothing to stack and torch.stack raises."""

EXPECT = r"D = 0"
SELECT = "empty_side"
TASK = "ch01.2"


def pairwise_sq_dists(x, y):
    per_feature = [(x[:, None, k] - y[None, :, k]) ** 2 for k in range(x.shape[1])]
    return torch.stack(per_feature).sum(0)
