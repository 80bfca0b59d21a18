"""Copies the generator's state and draws from the copy: repeatable, but the caller's
generator never moves on, so its next draws repeat the points just used."""

EXPECT = r"generator"
SELECT = "concentration or contrast or generator"


def distance_concentration(dims, n, generator=None):
    g = None
    if generator is not None:
        g = torch.Generator()
        g.set_state(generator.get_state())
    out = []
    for d in dims:
        dist = torch.pdist(torch.rand(n, d, generator=g, dtype=torch.float64))
        out.append(float((dist.max() - dist.min()) / dist.min()))
    return out
