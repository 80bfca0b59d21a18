"""Calls a curve diverging when any value is not finite, not when its last one is: a run
whose loss overflowed once (a skipped step) and then fell to a tiny fraction of its start
is called diverging."""

EXPECT = r"ends|last value is finite"
SELECT = "spike"
EDITS = [
    (
        "    if not math.isfinite(last) or last > 2 * first:\n",
        "    if not all(math.isfinite(v) for v in losses) or last > 2 * first:\n",
    )
]
