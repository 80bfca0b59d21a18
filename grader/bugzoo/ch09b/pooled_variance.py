"""is_regression pools one variance over both sides, weighted by their run counts (Student's
t): many quiet baseline runs swamp a few noisy candidate runs, whose shift then looks
significant."""

EXPECT = r"pooled"
SELECT = "quiet_runs"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    nb, nc = len(base), len(cand)
    pooled = ((nb - 1) * statistics.variance(base) + (nc - 1) * statistics.variance(cand)) / (
        nb + nc - 2
    )
    se = math.sqrt(pooled * (1 / nb + 1 / nc))
    diff = statistics.fmean(cand) - statistics.fmean(base)
    return diff > 0.0 if se == 0.0 else diff / se > 3.0
