"""A shortcut for a 0-d shape hands back a copy of the other shape by slicing it: right
for tuples, but a list comes back as a list, not a tuple of ints."""

EXPECT = r"tuple of ints|tuple\[int"
SELECT = "generated_pairs"

EDITS = [
    (
        "    a, b = tuple(int(s) for s in a), tuple(int(s) for s in b)\n",
        "    if len(a) == 0:\n        return b[:]\n    if len(b) == 0:\n        return a[:]\n"
        "    a, b = tuple(int(s) for s in a), tuple(int(s) for s in b)\n",
    )
]
