"""max / min instead of (max - min) / min: always above 1, so it never shows that in
high dimension everything is about equally far."""

EXPECT = r"max - min"
SELECT = "concentration or contrast"


def distance_concentration(dims, n, generator=None):
    out = []
    for d in dims:
        dist = torch.pdist(torch.rand(n, d, generator=generator, dtype=torch.float64))
        out.append(float(dist.max() / dist.min()))
    return out
