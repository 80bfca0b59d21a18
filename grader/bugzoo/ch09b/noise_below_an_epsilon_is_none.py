"""is_regression takes a standard error below 1e-12 for float noise, "exactly repeatable
runs", and then compares the first runs: metrics measured in tiny units (a loss in 1e-13)
are judged by one pair of runs, equal means called a regression (held-out round 14)."""

EXPECT = r"units"
SELECT = "clear_cases"
EDITS = [("    if se == 0.0:\n", "    if se < 1e-12:\n")]
