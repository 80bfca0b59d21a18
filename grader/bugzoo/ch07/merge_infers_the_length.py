"""Heads are merged with reshape(B, -1, H * Dh), leaving the sequence length to be
inferred: right on every input with elements, but an empty batch (B = 0) has no elements
to infer it from, so merge_heads raises on what split_heads returned for it."""

EXPECT = r"a size left to -1 cannot be inferred"
TASK = "ch07.2"
EDITS = [
    (
        "    return x.transpose(1, 2).reshape(B, T, H * Dh)",
        "    return x.transpose(1, 2).reshape(B, -1, H * Dh)",
    )
]
