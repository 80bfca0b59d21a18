"""Non-finite is tested with math.isnan, so a loss that ends at -inf (where no comparison
with the start says 'far above') is not called diverging."""

EXPECT = r"-inf|isfinite"
SELECT = "classify"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if math.isnan(last) or last > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
