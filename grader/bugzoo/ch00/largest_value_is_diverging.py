"""Divergence is judged by the worst value seen instead of the last one, so a curve that
spikes once early on and then falls to a tiny fraction of its start is called diverging."""

EXPECT = r"ends"
SELECT = "spike"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or max(losses) > 2 * first:
        return "diverging"
    steps = [b - a for a, b in zip(losses, losses[1:])]
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
