"""CausalSelfAttention builds its causal mask in forward with torch.ones on the default
device: right on the CPU, but a model moved to a GPU mixes devices and raises."""

EXPECT = r"x\.device|registered buffer"
SELECT = "batch_rows_apart"

EDITS = [
    (
        '        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))',
        "        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))\n"
        '        scores = scores.masked_fill(~allowed, float("-inf"))',
    ),
]
