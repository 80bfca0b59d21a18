"""Each micro-batch's share of the batch is computed as a tensor (``torch.tensor(size) / n``),
which torch makes float32: the shares are rounded to float32's 7 digits, so a float64
model's accumulated gradient is off by ~1e-8 of itself wherever a share such as 5/13 is not
exact in float32, although its micro-batch losses and backward passes are float64."""

EXPECT = r"float64"
SELECT = "accumulated"
TASK = "ch02.4"
EDITS = [
    (
        "        share = len(x_part) / n  # this micro-batch's weight in the full-batch mean\n",
        "        share = torch.tensor(len(x_part)) / n  # a 0-d tensor: float32\n",
    )
]
