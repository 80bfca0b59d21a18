"""check_contract measures each channel's std in one pass, E[x^2] - E[x]^2, in float32: for
raw counts around 1e3..1e4 with a spread below 1 the variance cancels to noise, so a correct
batch is reported as a normalization violation."""

EXPECT = r"mean of the squares|subtract the mean first"
SELECT = "far_from_zero"
EDITS = [
    (
        "    return flat.mean(dim=1), flat.std(dim=1)\n",
        "    mean, n = flat.mean(dim=1), flat.shape[1]\n"
        "    var = ((flat * flat).mean(dim=1) - mean * mean) * n / (n - 1)\n"
        "    return mean, var.clamp(min=0).sqrt()\n",
    )
]
