"""Statistics and writes go through x.flatten(2): a view while H and W merge (contiguous,
channels-last, a window strided along W), a silent copy when H is strided or H and W are
transposed in memory, and then x never changes."""

EXPECT = r"copy"
SELECT = "every_layout_and_window"


def standardize_channels_(x, eps=1e-5):
    flat = x.flatten(2)  # (B, C, H*W)
    mean = flat.mean(dim=(0, 2), keepdim=True)
    var = flat.var(dim=(0, 2), unbiased=False, keepdim=True)
    flat.sub_(mean).div_(torch.sqrt(var + eps))
    return x
