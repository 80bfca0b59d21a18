"""Draws the points from a standard normal instead of the unit cube: distances still
concentrate as d grows, but every contrast comes out about 20% too large."""

EXPECT = r"uniform"
SELECT = "concentration or contrast"
EDITS = [
    (
        "torch.rand(n, d, generator=generator, dtype=torch.float64)",
        "torch.randn(n, d, generator=generator, dtype=torch.float64)",
    )
]
