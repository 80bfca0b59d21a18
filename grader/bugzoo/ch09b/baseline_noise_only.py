"""is_regression measures the noise on the baseline's runs only: a quiet baseline makes any
noisy candidate's shift look significant, whatever the candidate's own spread."""

EXPECT = r"both sides"
SELECT = "noise"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    se = statistics.stdev(base) / math.sqrt(len(base))
    diff = statistics.fmean(cand) - statistics.fmean(base)
    return diff > 0.0 if se == 0.0 else diff / se > 3.0
