"""``classify_curve`` works on a float64 numpy copy, settles "converging" before looking for
oscillation, and judges "a clear fall" by the level of the last few points (their mean)
rather than by the last point alone, so a zigzag that happens to stop on a trough is not
read as a fall. The endpoint rules for diverging and converging are the contract's."""

import numpy as np


def classify_curve(losses: list[float]) -> str:
    """Name the shape of a loss curve: "converging", "slow", "oscillating" or "diverging".

    diverging: the loss ends non-finite or far above where it started;
    oscillating: it goes up and down repeatedly without a clear fall;
    converging: it fell to a small fraction (< 10%) of its start;
    slow: it falls steadily but has not got there.
    Only reads ``losses``: the caller's list is not changed.
    """
    curve = np.array([float(v) for v in losses], dtype=np.float64)
    if curve.size == 0:
        raise ValueError("an empty loss curve has no shape to classify")
    start, end = curve[0], curve[-1]
    if not np.isfinite(end) or end > 2.0 * start:
        return "diverging"
    if end <= 0.1 * start:
        return "converging"
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf inside the curve is fine
        moves = np.diff(curve)
        recent_level = curve[-4:].mean()  # a zigzag's level, whichever phase it stopped on
    rises = int(np.count_nonzero(moves > 0))
    if moves.size and 3 * rises >= moves.size and recent_level > 0.5 * start:
        return "oscillating"
    return "slow"
