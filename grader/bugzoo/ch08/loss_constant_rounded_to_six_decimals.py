"""loss_constant tests equality after round(v, 6): two losses 1e-7 apart on either side of a
rounding boundary (1.0000004 and 1.0000006) round apart, although they are within 1e-6."""

EXPECT = r"absolute tolerance"
SELECT = "tolerance_at_any"

EDITS = [
    (
        "        if max(losses) - min(losses) <= 1e-6:\n",
        "        if len({round(v, 6) for v in losses}) == 1:\n",
    ),
]
