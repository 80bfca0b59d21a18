"""Uses squared distances (cheaper, no sqrt): the contrast comes out about twice too
large in high dimension."""

EXPECT = r"not squared"
SELECT = "concentration or contrast"


def distance_concentration(dims, n, generator=None):
    out = []
    for d in dims:
        pts = torch.rand(n, d, generator=generator, dtype=torch.float64)
        sq = torch.pdist(pts) ** 2
        out.append(float((sq.max() - sq.min()) / sq.min()))
    return out
