"""Tuples are written without their number of items (lists and dicts keep theirs): ((), t)
and ((t,),) both read "sequence, sequence, t", so where a nested tuple ends is lost."""

EXPECT = r"number of items"
SELECT = "narrow_dtypes"
TASK = "ch09b.1"

EDITS = [
    (
        '        h.update(f"L{len(obj)}:".encode())\n',
        '        h.update(f"L{len(obj)}:".encode() if isinstance(obj, list) else b"L:")\n',
    )
]
