"""Converging means "it got below 10% of its start at some step and did not end above
where it started": a run that reached the goal once counts as converged, so a crawl with
one early dip to 0 is called converging although it ends at 60% of its start."""

EXPECT = r"not the lowest value reached"
SELECT = "spike_or_dip"
TASK = "ch00.3"
EDITS = [
    (
        "    if last <= 0.1 * first:\n",
        "    if any(v <= 0.1 * first for v in losses[1:]) and last < first:\n",
    )
]
