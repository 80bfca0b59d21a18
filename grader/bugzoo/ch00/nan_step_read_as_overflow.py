"""A nan loss is read as an overflow upwards: nan is replaced by inf before the steps are
counted, so a nan passing once in the middle of a falling curve makes a rise, and a short
falling curve with one nan is called 'oscillating'."""

EXPECT = r"nan step.*neither a rise"
SELECT = "short_curves"
TASK = "ch00.3"
EDITS = [
    (
        "    steps = [b - a for a, b in zip(losses, losses[1:])]\n",
        "    seen = [math.inf if math.isnan(v) else v for v in losses]\n"
        "    steps = [b - a for a, b in zip(seen, seen[1:])]\n",
    )
]
