"""at_chance is skipped whenever any loss is nan or inf (held-out round 10,
at_chance_skipped_after_a_nan): a run with one blown-up step loses the check on all its
finite losses, where the best loss is the smallest finite one."""

EXPECT = r"best finite loss|smallest finite"
SELECT = "at_chance_at_its_threshold"
TASK = "ch08.2"

EDITS = [
    (
        "        finite = [v for v in losses if math.isfinite(v)]\n",
        "        finite = losses if all(math.isfinite(v) for v in losses) else []\n",
    )
]
