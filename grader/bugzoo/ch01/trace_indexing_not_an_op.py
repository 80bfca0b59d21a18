"""Indexing and attribute access are taken for bookkeeping rather than computation:
calls named __getitem__ or __get__ are not recorded, so x[:, None], x[mask], x[k] and x.T
leave no entry, although each returns a tensor (often of a new shape)."""

EXPECT = r"dunder methods"
SELECT = "trace_shapes"
TASK = "ch01.4"
EDITS = [
    (
        """        if name == "__get__":  # a property such as x.T or x.mT
            name = getattr(func.__self__, "__name__", name)
""",
        """        if name in ("__getitem__", "__get__"):  # reading a tensor, not computing one
            return out
""",
    )
]
