"""Each reached leaf is claimed by the first name that holds it: a tensor given under two
names (tied weights) is True only under the first."""

EXPECT = r"several names|tied"
SELECT = "random_graphs"

EDITS = [
    (
        "    return {name: id(p) in reached for name, p in pairs}\n",
        "    out = {}\n    for name, p in pairs:\n        out[name] = id(p) in reached\n"
        "        reached.discard(id(p))\n    return out\n",
    )
]
