"""Classifies correctly, then tidies the caller's list into ratios of its start: every
verdict is right and the caller's record of the run is gone."""

EXPECT = r"changed its argument `losses`"
SELECT = "classify"


def classify_curve(losses):
    if not losses:
        raise ValueError("classify_curve needs at least one loss value")
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        verdict = "diverging"
    else:
        steps = [b - a for a, b in zip(losses, losses[1:])]
        ups = sum(d > 0 for d in steps)
        if steps and ups >= len(steps) / 3 and last > 0.5 * first:
            verdict = "oscillating"
        elif last <= 0.1 * first:
            verdict = "converging"
        else:
            verdict = "slow"
    losses[:] = [v / first for v in losses]
    return verdict
