"""Oscillating needs the end to lie between half and 1.25 times the start ("ending a little
above the start is not far above", taken as the only way up a zigzag may end); a zigzag
that climbs to 1.5 times its start, neither falling nor far above, is called slow."""

EXPECT = r"oscillat"
SELECT = "generated_curves"
TASK = "ch00.3"


def classify_curve(losses):
    if not losses:
        raise ValueError("classify_curve needs at least one loss value")
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    rises = sum(b > a for a, b in zip(losses, losses[1:]))
    if 3 * rises >= len(losses) - 1 > 0 and 0.5 * first < last < 1.25 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
