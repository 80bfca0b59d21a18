"""The spec's wrong answer: x - y subtracts row i of y from row i of x only, which is
legal when N == M and returns the N distances of the diagonal."""

EXPECT = r"row i with row i|one entry per"
SELECT = "pairwise"


def pairwise_sq_dists(x, y):
    return ((x - y) ** 2).sum(-1)
