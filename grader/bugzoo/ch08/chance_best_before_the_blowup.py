"""at_chance takes the best loss only over the steps before the first nan or inf loss, as if
the run ended when the loss blew up: a run whose first loss is non-finite never gets the
check, and a best finite loss that comes after the blow-up is ignored."""

EXPECT = r"best finite loss|smallest finite"
SELECT = "at_chance_at_its_threshold"
TASK = "ch08.2"

EDITS = [
    (
        "        finite = [v for v in losses if math.isfinite(v)]\n",
        "        finite = []\n"
        "        for v in losses:\n"
        "            if not math.isfinite(v):\n"
        "                break\n"
        "            finite.append(v)\n",
    )
]
