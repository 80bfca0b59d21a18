"""A single rise anywhere makes the curve 'oscillating': 'up and down repeatedly' is
read as 'up at least once'."""

EXPECT = r"repeatedly"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    if any(d > 0 for d in steps) and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
