"""is_regression, where neither side varies, guards against the rounding of means with
math.isclose: a candidate whose every run is worse by a few ulps (or by a relative 1e-9) is
"equal" and not a regression, although runs that never vary make any worsening one."""

EXPECT = r"never varies|worsening"
TASK = "ch09b.4"
EDITS = [
    (
        "        return cand[0] > base[0]\n",
        "        return diff > 0.0 and not math.isclose(statistics.fmean(cand), statistics.fmean(base))\n",
    )
]
