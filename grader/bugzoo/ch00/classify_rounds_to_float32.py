"""Classifies a float32 copy of the curve: the caller's list is untouched, but values beyond
float32's range become inf (above 3.4e38) or 0 (below 1.4e-45), so such a curve's name
depends on its scale."""

EXPECT = r"float32"
SELECT = "ratio_only"
EDITS = [
    (
        "    first, last = losses[0], losses[-1]\n",
        "    losses = torch.tensor(losses, dtype=torch.float32).tolist()  # a rounded copy\n"
        "    first, last = losses[0], losses[-1]\n",
    )
]
