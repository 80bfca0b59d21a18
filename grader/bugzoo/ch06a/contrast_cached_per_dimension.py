"""distance_concentration measures each dimension once: a repeated entry of dims reuses the
first contrast and draws nothing, so it is no new measurement and the caller's generator
ends a draw short."""

EXPECT = r"repeated|cache"
SELECT = "own_points"
EDITS = [
    (
        "    out = []\n    for d in dims:\n",
        "    out, seen = [], {}\n    for d in dims:\n        if d in seen:\n"
        "            out.append(seen[d])\n            continue\n",
    ),
    (
        "        out.append(float((pair.max() - pair.min()) / pair.min()))\n",
        "        seen[d] = float((pair.max() - pair.min()) / pair.min())\n        out.append(seen[d])\n",
    ),
]
