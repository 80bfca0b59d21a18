"""``compare_runs`` compares losses through ``float.hex`` (bit-exact for numbers, every nan equal to
every nan whatever its sign bit) and words its entries differently, still starting with the field
name and saying ``step N``; ``is_regression`` is Yuen's robust Welch test on 20%-trimmed means with
winsorized variances, thresholded at 3 like the reference.
"""

import math
import statistics


def _same_loss(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return float(a).hex() == float(b).hex()


def compare_runs(a, b):
    """Compare two runs field by field. ``comparable`` iff their init and order fingerprints
    agree; losses are compared bitwise (nan equals nan) and their entry names the first step
    that differs, e.g. "losses: first differ at step 3 (0.52 vs 0.53)"."""
    same_start = a.init_fingerprint == b.init_fingerprint
    same_order = a.order_fingerprint == b.order_fingerprint
    notes = []
    if not same_start:
        notes.append(
            f"init_fingerprint differs ({a.init_fingerprint[:12]} vs {b.init_fingerprint[:12]})"
        )
    if not same_order:
        notes.append(
            f"order_fingerprint differs ({a.order_fingerprint[:12]} vs {b.order_fingerprint[:12]})"
        )
    shorter = min(len(a.losses), len(b.losses))
    first_bad = next((k for k in range(shorter) if not _same_loss(a.losses[k], b.losses[k])), None)
    if first_bad is not None:
        notes.append(
            f"losses diverge at step {first_bad}: {a.losses[first_bad]!r} against "
            f"{b.losses[first_bad]!r}"
        )
    elif len(a.losses) != len(b.losses):
        notes.append(
            f"losses diverge at step {shorter}: one run has {len(a.losses)} steps, "
            f"the other {len(b.losses)}"
        )
    return Comparison(same_start and same_order, notes)


def _trimmed_mean_and_noise(values: list[float]) -> tuple[float, float]:
    """Yuen's 20%-trimmed mean and the squared standard error of it."""
    ordered = sorted(values)
    n = len(ordered)
    cut = int(0.2 * n)
    kept = ordered[cut : n - cut]
    winsorized = [kept[0]] * cut + kept + [kept[-1]] * cut
    h = len(kept)
    squared_se = (n - 1) * statistics.variance(winsorized) / (h * (h - 1))
    # kept values all equal: that value itself (their mean can round away from it)
    centre = kept[0] if kept[0] == kept[-1] else statistics.fmean(kept)
    return centre, squared_se


def is_regression(baseline_by_seed, candidate_by_seed):
    """Is the candidate's metric (lower is better) worse than the baseline's by more than
    seed-to-seed noise explains? Each maps seed -> metric of one run; needs >= 2 runs a side
    (ValueError otherwise). One-sided: an improvement is never a regression."""
    base = [float(v) for v in baseline_by_seed.values()]
    cand = [float(v) for v in candidate_by_seed.values()]
    if len(base) < 2 or len(cand) < 2:
        raise ValueError(
            f"is_regression got {len(base)} baseline and {len(cand)} candidate runs: "
            "at least 2 a side are needed to measure seed-to-seed noise"
        )
    base_centre, base_sq = _trimmed_mean_and_noise(base)
    cand_centre, cand_sq = _trimmed_mean_and_noise(cand)
    worse_by = cand_centre - base_centre
    if base_sq + cand_sq == 0.0:
        return worse_by > 0.0
    return worse_by / math.sqrt(base_sq + cand_sq) > 3.0
