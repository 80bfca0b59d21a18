"""Non-finite losses are replaced, in the caller's own list, by a value above the largest
finite one before plotting: the picture is fine, the caller's record of the run is not."""

EXPECT = r"changed its argument `losses`"
SELECT = "plot"
EDITS = [
    (
        "    fig, ax = plt.subplots(figsize=(5, 3.2))\n",
        "    top = max((v for v in losses if math.isfinite(v)), default=1.0)\n"
        "    losses[:] = [v if math.isfinite(v) else 10 * top for v in losses]\n"
        "    fig, ax = plt.subplots(figsize=(5, 3.2))\n",
    )
]
