"""After the range check, non-finite values are set to 0 so the channel statistics stay
finite; but batch.detach().float() of a float32 batch is the caller's own storage, so
checking a batch rewrites it: its nan and inf are gone."""

EXPECT = r"in place|caller|changed its argument `batch`"
SELECT = "contract or violation or range"
TASK = "ch05a.2"

EDITS = [
    (
        "    mean, std = _channel_stats(x, 1)  # (C,), (C,)\n",
        "    x[~torch.isfinite(x)] = 0.0  # keep the statistics finite\n"
        "    mean, std = _channel_stats(x, 1)  # (C,), (C,)\n",
    )
]
