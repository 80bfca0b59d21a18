"""is_regression compares one pair of runs (the first seed of each) with a 5% tolerance."""

EXPECT = r"noise|one run|pair|spread|luck"
SELECT = "judged or unlucky or lucky or noise or measured"


def is_regression(baseline_by_seed, candidate_by_seed):
    b = next(iter(baseline_by_seed.values()))
    c = next(iter(candidate_by_seed.values()))
    return c > 1.05 * b
