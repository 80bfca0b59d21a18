"""The estimate always uses 4 bytes per element, whatever the dtype."""

EXPECT = r"element size|dtype"
SELECT = "estimate"


def estimate_activation_mb(batch, widths, dtype=torch.float32):
    return batch * sum(widths[:-1]) * 4 / 2**20
