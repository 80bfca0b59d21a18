"""Lines the bias up with the output columns by unsqueeze_(0), in place: the output is
right, and the caller's bias comes back as a [1, O] matrix."""

EXPECT = r"unsqueeze_\(\)|in place|changed its argument"
SELECT = "linear"


def batch_linear(x, W, b):
    if b.dim() == 1:
        with torch.no_grad():
            b.unsqueeze_(0)  # (1, O): one row, broadcast over the batch
    return x @ W.T + b
