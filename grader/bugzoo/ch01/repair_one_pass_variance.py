"""The variance as E[x^2] - E[x]^2, in one pass: right near 0, but far from it (float32
data around 1e4) the two terms agree in every digit float32 keeps and their difference is
rounding noise."""

EXPECT = r"E\[x\^2\] - E\[x\]\^2"
SELECT = "standardize"
EDITS = [
    (
        "    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)  # (1, C, 1, 1)\n",
        "    var = (x * x).mean(dim=(0, 2, 3), keepdim=True) - mean * mean\n",
    )
]
