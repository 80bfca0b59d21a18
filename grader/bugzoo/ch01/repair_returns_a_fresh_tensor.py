"""Correct values, but computed out of place and returned as a new tensor; x itself
is never standardized."""

EXPECT = r"in place|itself"
SELECT = "standardize"


def standardize_channels_(x, eps=1e-5):
    mean = x.mean(dim=(0, 2, 3), keepdim=True)
    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps)
