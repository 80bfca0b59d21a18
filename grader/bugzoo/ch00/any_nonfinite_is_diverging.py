"""Calls a curve diverging when any value is not finite, not when its last one is: a run
whose loss overflowed once (a skipped step) and then fell to a tiny fraction of its start
is called diverging."""

EXPECT = r"ends|last value is finite"
SELECT = "spike"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not all(math.isfinite(v) for v in losses) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
