"""All n x n distances are used, including each point's distance to itself (0), so the
minimum is 0 and the contrast is infinite."""

EXPECT = r"itself|min is 0"
SELECT = "concentration or contrast"


def distance_concentration(dims, n, generator=None):
    out = []
    for d in dims:
        dist = torch.cdist(*(2 * [torch.rand(n, d, generator=generator, dtype=torch.float64)]))
        out.append(float((dist.max() - dist.min()) / dist.min()))
    return out
