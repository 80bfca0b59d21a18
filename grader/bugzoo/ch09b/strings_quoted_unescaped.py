"""Strings are written between double quotes without escaping the quotes they hold: the key
'a"M1:"b' closes its own quote and reads like a dict nested under "a"."""

EXPECT = r"reads back one way only"
SELECT = "keys_order"
TASK = "ch09b.1"

EDITS = [
    (
        '        h.update(f"S{len(obj)}:{obj}".encode())\n',
        "        h.update(f'\"{obj}\"'.encode())\n",
    )
]
