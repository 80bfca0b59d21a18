"""Python ints are packed with struct "<q" (eight bytes, "binary-exact"): an int key beyond
64 bits raises. Held-out round 10."""

EXPECT = r"int of any size|no fixed width"
SELECT = "keys_order"
TASK = "ch09b.1"

EDITS = [
    (
        "    elif isinstance(obj, (bool, int, float)) or obj is None:\n",
        "    elif isinstance(obj, int) and not isinstance(obj, bool):\n"
        '        h.update(b"Pint:" + struct.pack("<q", obj))\n'
        "    elif isinstance(obj, (bool, int, float)) or obj is None:\n",
    )
]
