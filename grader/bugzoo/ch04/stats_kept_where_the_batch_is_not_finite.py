"""RunningNorm guards its buffers against poisoning: where a feature's batch mean or variance
is not finite (an inf or nan in that column) it keeps that feature's running statistics as
they were, updating only the finite features. Every finite feature matches BatchNorm1d, but
the contract says numerically the same as BatchNorm1d(affine=False), which takes such a batch
and whose running statistics become inf / nan for that feature."""

EXPECT = r"BatchNorm1d|non-finite"
SELECT = "one_row"
TASK = "ch04.4"

EDITS = [
    (
        "                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)\n"
        "                self.running_var.mul_(1 - self.momentum).add_(self.momentum * var * n / (n - 1))\n",
        "                ok = torch.isfinite(mean) & torch.isfinite(var)  # keep the old ones there\n"
        "                new_mean = (1 - self.momentum) * self.running_mean + self.momentum * mean\n"
        "                new_var = (1 - self.momentum) * self.running_var + self.momentum * var * n / (n - 1)\n"
        "                self.running_mean.copy_(torch.where(ok, new_mean, self.running_mean))\n"
        "                self.running_var.copy_(torch.where(ok, new_var, self.running_var))\n",
    )
]
