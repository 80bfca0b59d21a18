"""Refuses iters == 0 only: a negative count times nothing and returns nonsense."""

EXPECT = r"at least 1|negative"
SELECT = "timed_call"
EDITS = [("    if iters < 1:\n", "    if iters == 0:\n")]
