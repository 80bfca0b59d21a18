"""``is_regression`` compares the shift of the medians with the noise of the medians (a robust
spread, 1.4826 x MAD, or the standard deviation below 5 runs, times 1.2533 / sqrt(n) per side,
combined over both sides), one of the rules the reading names; one far-out run moves neither a
median nor a MAD.
"""

import math
import statistics


def _median_and_its_noise(values: list[float]) -> tuple[float, float]:
    centre = statistics.median(values)
    spread = 1.4826 * statistics.median(abs(v - centre) for v in values)
    if len(values) < 5 or spread == 0.0:
        # a MAD of 2-4 runs (or of runs that mostly tie) is too erratic: use the standard deviation
        spread = statistics.stdev(values)
    # the standard error of a median is about sqrt(pi / 2) times that of a mean
    return centre, math.sqrt(math.pi / 2) * spread / math.sqrt(len(values))


def is_regression(baseline_by_seed, candidate_by_seed):
    """Is the candidate's metric (lower is better) worse than the baseline's by more than
    seed-to-seed noise explains? Each maps seed -> metric of one run; needs >= 2 runs a side
    (ValueError otherwise). One-sided: an improvement is never a regression."""
    baseline = [float(v) for v in baseline_by_seed.values()]
    candidate = [float(v) for v in candidate_by_seed.values()]
    if min(len(baseline), len(candidate)) < 2:
        raise ValueError(
            "is_regression: need at least two runs on each side to estimate seed-to-seed noise"
        )
    base_mid, base_noise = _median_and_its_noise(baseline)
    cand_mid, cand_noise = _median_and_its_noise(candidate)
    shift = cand_mid - base_mid
    noise = math.hypot(base_noise, cand_noise)
    if noise == 0.0:
        return shift > 0.0
    return shift > 3.0 * noise
