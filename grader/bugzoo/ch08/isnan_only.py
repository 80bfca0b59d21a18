"""Non-finite means nan only: losses, gradients and parameters are tested with isnan,
so an infinite loss or gradient goes unreported."""

EXPECT = r"inf"
SELECT = "infinite or nonfinite or loss_constant"

EDITS = [
    (
        "        if not math.isfinite(losses[-1]):\n",
        "        if math.isnan(losses[-1]):\n",
    ),
    (
        "                if not torch.isfinite(p.grad).all():\n",
        "                if torch.isnan(p.grad).any():\n",
    ),
    (
        "        if not torch.isfinite(p.detach()).all():\n",
        "        if torch.isnan(p.detach()).any():\n",
    ),
]
