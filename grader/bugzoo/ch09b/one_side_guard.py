"""is_regression refuses only when both sides have a single run; with one baseline run its
variance is nan (numpy, ddof=1), the statistic is nan, and the answer is a silent False."""

EXPECT = r"one run|single|noise"
SELECT = "judged or unlucky or lucky or noise or measured"

import numpy as np  # noqa: E402


def is_regression(baseline_by_seed, candidate_by_seed):
    base = np.array(list(baseline_by_seed.values()), dtype=float)
    cand = np.array(list(candidate_by_seed.values()), dtype=float)
    if len(base) < 2 and len(cand) < 2:
        raise ValueError("one run a side cannot measure noise")
    with np.errstate(all="ignore"):
        se = np.sqrt(np.var(base, ddof=1) / len(base) + np.var(cand, ddof=1) / len(cand))
        return bool((cand.mean() - base.mean()) / se > 3.0)
