"""The statistics are taken from ``x.float()`` whatever x's dtype: the writes still go into x
in place, but float64 data far from 0 are standardized with a mean and variance that kept
only float32's few digits."""

EXPECT = r"float32"
SELECT = "standardize"
EDITS = [
    (
        "    mean = x.mean(dim=(0, 2, 3), keepdim=True)  # (1, C, 1, 1)\n"
        "    var = x.var(dim=(0, 2, 3), unbiased=False, keepdim=True)  # (1, C, 1, 1)\n",
        "    mean = x.float().mean(dim=(0, 2, 3), keepdim=True)  # (1, C, 1, 1)\n"
        "    var = x.float().var(dim=(0, 2, 3), unbiased=False, keepdim=True)  # (1, C, 1, 1)\n",
    )
]
