"""check_targets tries every future offset before any past one (0, +1, +2, ..., then -1,
-2, ...): a row that repeats every 4 tokens with y[:, t] == x[:, t-1] also fits +3, and +3
is reported instead of -1 although |-1| is smaller. Held-out round 12."""

EXPECT = r"past offset before any future one"
SELECT = "several_shifts"
TASK = "ch10.3"

EDITS = [
    (
        "    for s in sorted(offsets, key=lambda s: (abs(s), -s)):",
        "    for s in sorted(offsets, key=lambda s: (s < 0, abs(s))):",
    )
]
