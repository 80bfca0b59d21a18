"""The rise share is judged on the first half of the curve only ("the early steps show
its character"), so a curve that falls gently at first and then zigzags for the rest,
ending at about 85% of its start, comes out 'slow' instead of 'oscillating'."""

EXPECT = r"not over a window"
SELECT = "classify"
TASK = "ch00.3"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    head = losses[: len(losses) // 2 + 1]
    steps = [b - a for a, b in zip(head, head[1:])]
    if steps and sum(d > 0 for d in steps) >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
