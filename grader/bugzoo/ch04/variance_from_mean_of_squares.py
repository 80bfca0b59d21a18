"""RunningNorm takes the batch variance as the mean of the squares minus the squared mean:
right on paper, but on inputs far from zero for their spread (1e3 +- 0.1 in float32) the
two nearly equal terms cancel and the variance loses its digits (or goes negative), so the
outputs and running_var drift from BatchNorm1d's."""

EXPECT = r"mean of the squares minus the squared mean"
SELECT = "running_norm"
EDITS = [
    (
        "            var = x.var(dim=0, unbiased=False)  # (num_features,)\n",
        "            var = (x * x).mean(dim=0) - mean * mean  # (num_features,)\n",
    )
]
