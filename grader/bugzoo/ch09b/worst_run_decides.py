"""is_regression flags the candidate when its worst run is worse than every baseline run."""

EXPECT = r"one run|tail|luck"
SELECT = "judged or unlucky or lucky or noise or measured"


def is_regression(baseline_by_seed, candidate_by_seed):
    if len(baseline_by_seed) < 2 or len(candidate_by_seed) < 2:
        raise ValueError("need at least 2 runs a side")
    return max(candidate_by_seed.values()) > max(baseline_by_seed.values())
