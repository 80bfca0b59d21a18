"""The training set takes round(0.8 * n) points instead of int(0.8 * n): the same for
n = 500 or 2000, one point off for n = 1001."""

EXPECT = r"int\(0\.8 \* n\)"
SELECT = "data"


def make_xor_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 2, generator=g)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    perm = torch.randperm(n, generator=g)
    k = round(0.8 * n)
    return XorData(X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]])
