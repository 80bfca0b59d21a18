"""The layer is computed in float32 and cast back to the input's dtype: the result has the
right dtype but only float32's digits, so it is not F.linear's answer on float64 inputs."""

EXPECT = r"float64"
SELECT = "layout_and_dtype"


def batch_linear(x, W, b):
    out = x.float() @ W.float().T + b.float()
    return out.to(x.dtype)
