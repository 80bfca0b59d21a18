"""The result is computed out of place and handed to x with ``x.data = ...``: x shows the
right values and is returned, but it now owns new memory, so the tensor it was a window
of (and every other view) never changes."""

EXPECT = r"new memory|x\.data"
SELECT = "standardize"


def standardize_channels_(x, eps=1e-5):
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
    x.data = (x - mean) / torch.sqrt(var + eps)
    return x
