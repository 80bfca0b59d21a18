"""Uses the unbiased variance (divides by n - 1); BatchNorm normalizes with the biased
one."""

EXPECT = r"biased variance|batch_norm"
SELECT = "standardize"


def standardize_channels_(x, eps=1e-5):
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    var = x.var(dim=(0, 2, 3), keepdim=True)
    x.sub_(mean).div_(torch.sqrt(var + eps))
    return x
