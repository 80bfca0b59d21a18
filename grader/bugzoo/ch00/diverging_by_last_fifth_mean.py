"""The end is smoothed before the diverging check: the mean of the curve's last fifth is
compared with twice the start, so a loss that falls and then jumps to 5 times its start at
its very last step is averaged down and called 'slow'."""

EXPECT = r"last value itself|smoothing"
SELECT = "spike"
TASK = "ch00.3"
EDITS = [
    (
        "    if not math.isfinite(last) or last > 2 * first:\n",
        "    tail = losses[-max(1, len(losses) // 5) :]  # the end of the curve, smoothed\n"
        "    if not math.isfinite(last) or sum(tail) / len(tail) > 2 * first:\n",
    )
]
