"""is_regression divides the shift of the means by the runs' spread, not by the standard
error of the means: 8 runs a side are treated like one, and real regressions pass."""

EXPECT = r"noise|spread|standard"
SELECT = "judged or unlucky or lucky or noise or measured"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("need two runs a side")
    spread = math.sqrt(statistics.variance(base) + statistics.variance(cand))
    return (statistics.fmean(cand) - statistics.fmean(base)) / spread > 3.0
