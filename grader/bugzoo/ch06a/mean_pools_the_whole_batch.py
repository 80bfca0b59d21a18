"""Boolean indexing x[mask] flattens every example's valid positions into one pile, so
the mean is taken over the whole batch: one vector instead of one per example."""

EXPECT = r"one mean feature vector per example|per example|per-row"
SELECT = "masked_mean"


def masked_mean(x, mask, dim):
    x = x.movedim(dim, mask.dim() - 1)
    return x[mask.movedim(dim, -1).bool()].mean(0)
