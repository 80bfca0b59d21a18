"""The bias is added per example row (b[:, None]) instead of per output column; legal
when B == O."""

EXPECT = r"bias|per output"
SELECT = "batch_linear"


def batch_linear(x, W, b):
    return x @ W.T + b[:, None]
