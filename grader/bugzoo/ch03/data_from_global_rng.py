"""make_xor_data seeds the global generator and draws from it: the data is the recipe's,
but every call resets the random state the rest of the training run draws from."""

EXPECT = r"global"
SELECT = "global_generator"


def make_xor_data(n, seed):
    torch.manual_seed(seed)
    X = torch.randn(n, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()
    perm = torch.randperm(n)
    k = int(0.8 * n)
    return XorData(X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]])
