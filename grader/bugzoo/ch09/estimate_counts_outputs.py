"""The estimate counts every layer's output (d1 .. dk) instead of every Linear's input
(d0 .. d_{k-1}): it forgets the input batch and adds the unsaved final output."""

EXPECT = r"input"
SELECT = "estimate"


def estimate_activation_mb(batch, widths, dtype=torch.float32):
    element = torch.empty((), dtype=dtype).element_size()
    return batch * sum(widths[1:]) * element / 2**20
