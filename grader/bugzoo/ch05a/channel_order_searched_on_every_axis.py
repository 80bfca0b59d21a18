"""Channel order is looked for on every axis after the batch axis, not only among permutations
of dim 1 and on the last axis: a batch whose channels sit on dim 2 (N, H, C, W) is called a
channel order violation, though the contract names only permuted channels and channels stored
last, and any other misplaced statistics are a normalization violation."""

EXPECT = r"normalization|channel order"
TASK = "ch05a.2"

EDITS = [
    (
        "    elif x.dim() == 4 and _channel_order(*_channel_stats(x, 3), contract) is not None:\n",
        "    elif any(\n"
        "        _channel_order(*_channel_stats(x, d), contract) is not None for d in range(2, x.dim())\n"
        "    ):\n",
    )
]
