"""Matches the graph's leaves to the parameters by the address of their data: a leaf made
from a parameter's .data starts at the same address and is taken for it."""

EXPECT = r"identity|data_ptr"
SELECT = "reachable"
EDITS = [
    ("                reached.add(id(leaf))\n", "                reached.add(leaf.data_ptr())\n"),
    (
        "    return {name: id(p) in reached for name, p in pairs}\n",
        "    return {name: p.data_ptr() in reached for name, p in pairs}\n",
    ),
    (
        "            reached.add(id(loss))  # the loss is itself a leaf parameter\n",
        "            reached.add(loss.data_ptr())\n",
    ),
]
