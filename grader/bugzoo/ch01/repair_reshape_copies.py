"""The error message's advice taken literally: .view becomes .reshape. On a transposed
tensor reshape must copy, so the in-place writes land in the copy and x is unchanged."""

EXPECT = r"copy"
SELECT = "standardize"


def standardize_channels_(x, eps=1e-5):
    B, C, H, W = x.shape
    flat = x.transpose(0, 1).reshape(C, B * H * W)
    mean = flat.mean(dim=1, keepdim=True)
    var = flat.var(dim=1, unbiased=False, keepdim=True)
    flat.sub_(mean).div_(torch.sqrt(var + eps))
    return x
