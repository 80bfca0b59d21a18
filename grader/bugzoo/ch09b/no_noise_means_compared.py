"""is_regression, with no noise on either side, compares the two means: equal runs whose
means round differently with the number of runs (three 0.1s average to 0.10000000000000002)
are called a regression."""

EXPECT = r"rounding"
TASK = "ch09b.4"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    diff = statistics.fmean(cand) - statistics.fmean(base)
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    if se == 0.0:
        return diff > 0.0
    return diff / se > 3.0
