"""Divides the curve by its first value in the caller's own list (only ratios matter), then
classifies: every verdict is right, and the caller's losses are gone."""

EXPECT = r"changed its argument `losses`"
SELECT = "classify"


def classify_curve(losses):
    if not losses:
        raise ValueError("classify_curve needs at least one loss value")
    first = losses[0]
    for k, v in enumerate(losses):
        losses[k] = v / first
    last = losses[-1]
    if not math.isfinite(last) or last > 2:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5:
        return "oscillating"
    if last <= 0.1:
        return "converging"
    return "slow"
