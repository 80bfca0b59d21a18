"""loss_constant compares neighbouring losses only: a slow steady drift, every step
within 1e-6 of the last, is called constant."""

EXPECT = r"neighbours"
SELECT = "loss_constant"

EDITS = [
    (
        "        if max(losses) - min(losses) <= 1e-6:\n",
        "        if all(abs(a - b) <= 1e-6 for a, b in zip(losses, losses[1:])):\n",
    ),
]
