"""is_regression calls any increase of the mean a regression, however noisy the runs."""

EXPECT = r"noise|spread"
SELECT = "judged or unlucky or lucky or noise or measured"


def is_regression(baseline_by_seed, candidate_by_seed):
    if len(baseline_by_seed) < 2 or len(candidate_by_seed) < 2:
        raise ValueError("need at least 2 runs a side")
    return statistics.fmean(candidate_by_seed.values()) > statistics.fmean(
        baseline_by_seed.values()
    )
