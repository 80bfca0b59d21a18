"""Strings are written as their bare text (no tag, no length, no quotes): the key "aM1:b"
spells out the encoding of a dict nested under "a", and both get one digest."""

EXPECT = r"reads back one way only"
SELECT = "keys_order"
TASK = "ch09b.1"

EDITS = [('        h.update(f"S{len(obj)}:{obj}".encode())\n', "        h.update(obj.encode())\n")]
