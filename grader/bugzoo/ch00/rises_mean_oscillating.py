"""Any curve that rises often enough is 'oscillating', even one that fell to almost
nothing along the way: the 'without a clear fall' half of the definition is dropped."""

EXPECT = r"clear fall"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    if steps and sum(d > 0 for d in steps) >= len(steps) / 3:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
