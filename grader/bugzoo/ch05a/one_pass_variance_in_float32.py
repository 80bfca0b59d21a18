"""fit_normalizer takes the variance in one pass, E[x^2] - E[x]^2, in float32: for a channel
that varies by 0.1 around 1e4 both terms are near 1e8, where float32's spacing is 8, so the
variance cancels to noise or 0 and apply divides by it."""

EXPECT = r"two passes|mean of the squares"
SELECT = "far_from_zero"
EDITS = [
    (
        "    std = x.std(dim=1)\n",
        "    n = x.shape[1]\n"
        "    std = (((x * x).mean(dim=1) - mean * mean) * n / (n - 1)).clamp(min=0).sqrt()\n",
    )
]
