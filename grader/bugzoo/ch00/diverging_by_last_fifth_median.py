"""One high last value is read as noise: the diverging check compares the median of the
curve's last fifth (not the last value) with twice the start, so a loss that falls and
then ends at 5 times its start is called 'slow'."""

EXPECT = r"last value itself|smoothing"
SELECT = "spike"
TASK = "ch00.3"
EDITS = [
    (
        "    if not math.isfinite(last) or last > 2 * first:\n",
        "    tail = sorted(losses[-max(1, len(losses) // 5) :])\n"
        "    if not math.isfinite(last) or tail[(len(tail) - 1) // 2] > 2 * first:\n",
    )
]
