"""Reflected operators are taken for echoes of a call already recorded (as if 1 - x ran
a sub and then x.__rsub__): calls named __r...__ are dropped, so 1 - x, 2 ** x, 1 / x,
7 % x and 1 << k leave no entry (and, by the same test, neither does k >> 1)."""

EXPECT = r"dunder methods"
SELECT = "trace_shapes"
TASK = "ch01.4"
EDITS = [
    (
        """        if name == "__get__":  # a property such as x.T or x.mT
            name = getattr(func.__self__, "__name__", name)
""",
        """        if name.startswith("__r"):  # the reflected twin of an op already seen
            return out
        if name == "__get__":
            name = getattr(func.__self__, "__name__", name)
""",
    )
]
