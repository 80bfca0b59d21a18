"""Leaves the loop as soon as the loss is no longer finite: the rows stop short of
``steps`` on a run that overflows, and the final w is one that was never updated."""

EXPECT = r"`steps` steps"
SELECT = "overflows"
EDITS = [
    (
        "        losses.append(loss.item())\n",
        "        losses.append(loss.item())\n        if not math.isfinite(loss.item()):\n"
        "            break\n",
    )
]
