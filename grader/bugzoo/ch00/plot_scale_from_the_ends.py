"""The log scale is chosen from the first and last losses: a curve with no losses at all
has no ends, and plotting it raises IndexError."""

EXPECT = r"first and last"
SELECT = "plot"
EDITS = [
    (
        "    if finite and min(finite) > 0 and max(finite) / min(finite) > 100:\n",
        "    if losses[0] > 0 and losses[-1] > 0 and losses[0] / losses[-1] > 100:\n",
    )
]
