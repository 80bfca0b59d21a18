"""Heads are split with view(B, T, H, -1), leaving the head size to be inferred: right on
every input with elements, but a batch or a sequence of size 0 (B = 0 or T = 0) has no
elements to infer it from, so the view raises where the split is a plain shape operation."""

EXPECT = r"a size left to -1 cannot be inferred"
TASK = "ch07.1"
EDITS = [
    (
        "    return x.view(B, T, n_heads, E // n_heads).transpose(1, 2)",
        "    return x.view(B, T, n_heads, -1).transpose(1, 2)",
    )
]
