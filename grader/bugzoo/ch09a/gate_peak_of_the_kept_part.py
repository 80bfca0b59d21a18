"""The peak is taken after gating, over the part that is kept: where the largest
|activation| lies in the discarded part, the output is scaled by a smaller number."""

EXPECT = r"before gating"
SELECT = "gate"

EDITS = [
    (
        "        peak = h.abs().amax()  # a 0-d tensor stays in the graph (no .item())\n",
        "",
    ),
    (
        "        return gated / peak\n",
        "        return gated / gated.abs().amax()\n",
    ),
]
