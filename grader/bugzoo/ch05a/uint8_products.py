"""The variance is computed by hand as E[x*x] - E[x]**2 on the uint8 pixels: x * x wraps
around at 256 (only .sum() promotes to int64), so the std is garbage."""

EXPECT = r"wrap|uint8|floating point"
SELECT = "normalizer or per_channel or square or generated"


def fit_normalizer(train_x):
    c = train_x.shape[1]
    flat = train_x.transpose(0, 1).reshape(c, -1)
    n = flat.shape[1]
    mean = flat.sum(dim=1) / n
    var = ((flat * flat).sum(dim=1) / n - mean**2) * n / (n - 1)
    std = var.clamp_min(0).sqrt().float()
    return Normalizer(mean.float(), torch.where(std > 1e-6, std, torch.ones_like(std)))
