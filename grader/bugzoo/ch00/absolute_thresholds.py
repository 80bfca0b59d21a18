"""The thresholds are absolute numbers, not fractions of the starting loss: a curve that
starts small is 'converging' before it has fallen at all."""

EXPECT = r"fractions of the starting loss"
SELECT = "classify"


def classify_curve(losses):
    last = losses[-1]
    if not math.isfinite(last) or last > 1000:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.1:
        return "oscillating"
    return "converging" if last < 0.1 else "slow"
