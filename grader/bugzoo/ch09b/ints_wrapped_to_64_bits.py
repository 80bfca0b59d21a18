"""Python ints are written as their low 64 bits (two's complement, as C would store them):
nothing raises, but 0 and 2**64, or -1 and 2**64 - 1, become one key."""

EXPECT = r"no fixed width"
SELECT = "keys_order"
TASK = "ch09b.1"

EDITS = [
    (
        "    elif isinstance(obj, (bool, int, float)) or obj is None:\n",
        "    elif isinstance(obj, int) and not isinstance(obj, bool):\n"
        '        h.update(b"Pint:" + struct.pack("<Q", obj & (2**64 - 1)))\n'
        "    elif isinstance(obj, (bool, int, float)) or obj is None:\n",
    )
]
