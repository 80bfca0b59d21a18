"""GPT.forward keeps the last block_size tokens of a longer input (and of its targets) instead
of refusing it: the logits then have block_size positions, not the input's T, and a caller
that forgot to crop never hears of it."""

EXPECT = r"instead of refusing"
SELECT = "refuses_more"
TASK = "ch10.6"
EDITS = [
    (
        '            raise ValueError(f"sequence of length {T} exceeds block_size {self.block_size}")\n',
        "            idx = idx[:, -self.block_size :]\n"
        "            targets = None if targets is None else targets[:, -self.block_size :]\n"
        "            B, T = idx.shape\n",
    )
]
