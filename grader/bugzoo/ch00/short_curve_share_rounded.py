"""The share of rising steps is rounded to a whole number of steps before it is compared,
so a two-point curve that only falls (0 rises of 1 step, a third rounded to 0) counts as
'up and down repeatedly'."""

EXPECT = r"never rises"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= round(len(steps) / 3) and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
