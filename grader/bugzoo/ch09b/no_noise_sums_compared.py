"""is_regression, with no noise on either side, compares sums scaled by the other side's
count (a common-denominator trick): equal runs can still differ in their last bit."""

EXPECT = r"rounding"
TASK = "ch09b.4"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    if se == 0.0:
        return sum(cand) * len(base) > sum(base) * len(cand)
    diff = statistics.fmean(cand) - statistics.fmean(base)
    return diff / se > 3.0
