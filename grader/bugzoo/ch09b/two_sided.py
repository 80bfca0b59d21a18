"""is_regression uses a two-sided test: a clearly better candidate is flagged too."""

EXPECT = r"better"
SELECT = "judged or unlucky or lucky or noise or measured"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("need at least 2 runs a side")
    diff = statistics.fmean(cand) - statistics.fmean(base)
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    return abs(diff) / se > 3.0
