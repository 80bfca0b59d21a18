"""distance_concentration measures the distinct pairs with F.pdist (the condensed upper
triangle, no self-distances to skip) instead of a full cdist matrix and its triangle."""

import torch.nn.functional as F  # noqa: E402


def distance_concentration(dims, n, generator=None):
    out = []
    for d in dims:
        pts = torch.rand(n, d, generator=generator, dtype=torch.float64)
        dist = F.pdist(pts)
        out.append(float((dist.max() - dist.min()) / dist.min()))
    return out
