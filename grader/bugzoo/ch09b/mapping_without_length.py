"""Dicts are written without their number of items: {'a': {}, 'b': t} and {'a': {'b': t}}
both read "dict, key a, dict, key b, t", so an empty dict before a sibling key reads like
a dict nested under it. Held-out round 12."""

EXPECT = r"number of items"
SELECT = "narrow_dtypes"
TASK = "ch09b.1"

EDITS = [('        h.update(f"M{len(obj)}:".encode())\n', '        h.update(b"M:")\n')]
