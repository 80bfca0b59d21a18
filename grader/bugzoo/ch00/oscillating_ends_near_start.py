"""A zigzag counts as oscillating only when it ends within half its start of where it
started ("zigzags that end about where they started" read literally), so one that ends at
1.8 times its start, up and down all the way, is called slow (held-out round 11)."""

EXPECT = r"oscillat"
SELECT = "generated_curves"
TASK = "ch00.3"
EDITS = [
    (
        "    if steps and ups >= len(steps) / 3 and last > 0.5 * first:\n",
        "    if steps and ups >= len(steps) / 3 and abs(last - first) < 0.5 * first:\n",
    )
]
