"""is_regression calls a shift of the means larger than one run's standard deviation a
regression: with many seeds that misses real shifts, with few it flags noise."""

EXPECT = r"sqrt\(n\)|standard error"
SELECT = "seeds"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    return statistics.fmean(cand) - statistics.fmean(base) > statistics.stdev(base)
