"""Strings are written after a type tag but without their length: a key whose text holds a
container header and a tag ("aM1:S:b") reads like a dict nested under "a". Held-out round 10."""

EXPECT = r"reads back one way only"
SELECT = "keys_order"
TASK = "ch09b.1"

EDITS = [
    ('        h.update(f"S{len(obj)}:{obj}".encode())\n', '        h.update(f"S:{obj}".encode())\n')
]
