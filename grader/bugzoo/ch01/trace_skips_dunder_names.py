"""Every call whose name starts with "__" is dropped as Python plumbing (meant for
__get__ and __repr__), which also drops indexing (x[:, None] is __getitem__), properties
(x.T), reflected operators (1 - x is __rsub__, 2 ** x is __rpow__) and the in-place and
bitwise operators torch names by their dunder (held-out round 9, dunder_ops_skipped)."""

EXPECT = r"dunder methods"
SELECT = "trace_shapes"
TASK = "ch01.4"
EDITS = [
    (
        """        if name == "__get__":  # a property such as x.T or x.mT
            name = getattr(func.__self__, "__name__", name)
""",
        """        if name.startswith("__"):  # __get__, __repr__, __format__: plumbing, not ops
            return out
""",
    )
]
