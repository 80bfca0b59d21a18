"""Welch's statistic with no guard for zero variance: deterministic runs (every seed gives
the same metric) divide by a zero standard error."""

EXPECT = r"zero|divide"
SELECT = "noise"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    return (statistics.fmean(cand) - statistics.fmean(base)) / se > 3.0
