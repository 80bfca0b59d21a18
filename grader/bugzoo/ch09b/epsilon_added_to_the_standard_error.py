"""is_regression guards the division with an epsilon added to the standard error instead of
a branch for no noise: the same for metrics near 1, but in tiny units (every metric times
1e-13) the epsilon swamps the real noise and no shift is ever significant."""

EXPECT = r"units"
SELECT = "clear_cases"


def is_regression(baseline_by_seed, candidate_by_seed):
    base, cand = list(baseline_by_seed.values()), list(candidate_by_seed.values())
    if len(base) < 2 or len(cand) < 2:
        raise ValueError("is_regression needs at least 2 runs per side")
    if max(base) == min(base) and max(cand) == min(cand):
        return cand[0] > base[0]  # no noise at all: compare the values
    diff = statistics.fmean(cand) - statistics.fmean(base)
    se = math.sqrt(statistics.variance(base) / len(base) + statistics.variance(cand) / len(cand))
    return diff / (se + 1e-12) > 3.0
