"""Draws from the global random state, so the generator argument changes nothing and
a run cannot be repeated."""

EXPECT = r"generator"
SELECT = "concentration or contrast"


def distance_concentration(dims, n, generator=None):
    out = []
    for d in dims:
        dist = torch.pdist(torch.rand(n, d, dtype=torch.float64))
        out.append(float((dist.max() - dist.min()) / dist.min()))
    return out
