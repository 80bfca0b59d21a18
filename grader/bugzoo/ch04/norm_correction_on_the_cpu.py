"""Builds the per-feature Bessel correction with torch.full on the default CPU: right on the
CPU, but a RunningNorm moved to a GPU fails in training mode."""

EXPECT = r"meta"
SELECT = "another_device"

EDITS = [
    (
        "                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * n / (n - 1))\n",
        "                bessel = torch.full(var.shape, n / (n - 1), dtype=var.dtype)\n"
        "                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * bessel)\n",
    )
]
