"""NormalizedGate divides by the peak floored at 1e-12 ("safe division"): right whenever
the largest |activation| is above 1e-12, but a batch of tinier activations is divided by
the floor instead of its peak, so the output shrinks towards 0."""

EXPECT = r"floor|epsilon|peak"
SELECT = "gate"
TASK = "ch09a.3"
EDITS = [
    (
        "        peak = h.abs().amax()  # a 0-d tensor stays in the graph (no .item())\n",
        "        peak = h.abs().amax().clamp(min=1e-12)\n",
    )
]
