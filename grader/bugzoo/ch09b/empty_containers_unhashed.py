"""An empty list, tuple or dict writes nothing at all (non-empty ones keep their kind and
length): [[], t] and [t, []] both read "list of 2, t", so where an empty container sits is
lost."""

EXPECT = r"number of items"
SELECT = "narrow_dtypes"
TASK = "ch09b.1"

EDITS = [
    (
        "    elif isinstance(obj, Mapping):\n",
        "    elif isinstance(obj, (Mapping, list, tuple)) and len(obj) == 0:\n"
        "        pass\n"
        "    elif isinstance(obj, Mapping):\n",
    )
]
