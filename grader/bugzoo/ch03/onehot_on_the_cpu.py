"""Picks the target logits through a one-hot mask built with torch.zeros on the default
CPU: right on CPU logits, but a CUDA batch fails."""

EXPECT = r"meta"
SELECT = "stays_on"
TASK = "ch03.4"

EDITS = [
    (
        "    picked = z.gather(1, targets.long().unsqueeze(1)).squeeze(1)  # (N,)\n",
        "    onehot = torch.zeros(logits.shape, dtype=logits.dtype)\n"
        "    onehot[torch.arange(len(targets)), targets] = 1.0\n"
        "    picked = (z * onehot).sum(dim=1)  # (N,)\n",
    )
]
