"""The converging threshold is a fraction of the start, but 20% instead of 10%, so a
curve that kept 11% of its loss is already called converging."""

EXPECT = r"11%|10%"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.2 * first else "slow"
