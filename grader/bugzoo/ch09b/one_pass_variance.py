"""is_regression's variances come from the one-pass formula (sum of squares minus n times the
squared mean), clamped at 0: right near 0, but for metrics around 1e6 or 1e8 it cancels
catastrophically, the noise reads as 0 and any worsening is called a regression."""

EXPECT = r"far from 0"
SELECT = "offset"
EDITS = [
    (
        "    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))\n",
        "    var = lambda xs: max(0.0, (sum(x * x for x in xs) - sum(xs) ** 2 / len(xs)) / (len(xs) - 1))  # noqa: E731\n"
        "    se = math.sqrt(var(base) / len(base) + var(cand) / len(cand))\n",
    )
]
