"""Stale gradients are cleared by scaling them by 0 (p.grad *= 0) instead of zeroing or
dropping them: a stale .grad holding nan or inf stays nan (nan * 0 is nan), so the
accumulated gradient is nan wherever the earlier step overflowed."""

EXPECT = r"nan \* 0"
SELECT = "accumulated"
TASK = "ch02.4"
EDITS = [
    (
        "    model.zero_grad(set_to_none=True)  # stale gradients from earlier backward calls\n",
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        "            if p.grad is not None:\n"
        "                p.grad *= 0\n",
    )
]
