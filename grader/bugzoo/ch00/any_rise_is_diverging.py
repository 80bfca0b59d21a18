"""'Far above its start' is read as 'above its start', so a zigzag that ends a little
higher than it began is called diverging."""

EXPECT = r"far above"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
