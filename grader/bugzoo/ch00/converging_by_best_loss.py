"""Converging is judged by the best loss reached instead of where the curve ends (the
early-stopping view), so a curve that dipped below 10% of its start and climbed back to
40% is called converging (held-out round 8)."""

EXPECT = r"not the lowest value reached"
SELECT = "spike_or_dip"
TASK = "ch00.3"
EDITS = [("    if last <= 0.1 * first:\n", "    if min(losses) <= 0.1 * first:\n")]
