"""The transpose is removed so .view works: x.view(C, -1) groups memory by example,
not by channel, which runs silently when B == C."""

EXPECT = r"channel"
SELECT = "standardize"


def standardize_channels_(x, eps=1e-5):
    B, C, H, W = x.shape
    flat = x.view(C, B * H * W)
    mean = flat.mean(dim=1, keepdim=True)
    var = flat.var(dim=1, unbiased=False, keepdim=True)
    flat.sub_(mean).div_(torch.sqrt(var + eps))
    return x
