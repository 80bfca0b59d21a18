"""RunningNorm normalises right, but updates running_var with the unbiased variance taken
as (sum of squares - n * mean^2) / (n - 1): on inputs far from zero for their spread the
two terms cancel, so the running variance (and every eval-mode output) drifts from
BatchNorm1d's."""

EXPECT = r"mean of the squares minus the squared mean"
SELECT = "running_norm"
EDITS = [
    (
        "self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * n / (n - 1))",
        "self.running_var.mul_(1 - self.momentum).add_(\n"
        "                    self.momentum * ((x * x).sum(dim=0) - n * mean * mean) / (n - 1)\n"
        "                )",
    )
]
