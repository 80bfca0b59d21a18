"""Divergence is judged by comparison alone; nan compares False, so an overflowed run
looks like it is settling."""

EXPECT = r"inf|nan"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    if not last > 0.1 * first:
        return "converging"
    return "slow"
