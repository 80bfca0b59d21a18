"""Only inf/nan counts as diverging, so a loss that grew a hundred-thousandfold but is
still finite is called 'oscillating' (it only went up)."""

EXPECT = r"still finite"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last):
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    if last <= 0.1 * first:
        return "converging"
    return "slow"
