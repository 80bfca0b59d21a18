"""check_targets tries a past offset only after the next larger future one (0, +1, +2, -1,
+3, -2, ...), reading "+s before -s" as "the future gets a step ahead": a row that repeats
every 3 tokens with y[:, t] == x[:, t-1] also fits +2, and +2 is reported instead of -1."""

EXPECT = r"past offset before any future one"
SELECT = "several_shifts"
TASK = "ch10.3"

EDITS = [
    (
        "    for s in sorted(offsets, key=lambda s: (abs(s), -s)):",
        "    for s in sorted(offsets, key=lambda s: s if s >= 0 else 1.5 - s):",
    )
]
