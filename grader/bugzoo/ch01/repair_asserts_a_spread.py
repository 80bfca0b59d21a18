"""Refuses a channel of a single value with a bare ``assert`` (an AssertionError without a
message, and nothing at all under python -O) instead of the 0s or a ValueError saying why:
F.batch_norm's refusal is allowed, an unexplained crash is not."""

EXPECT = r"ValueError or RuntimeError that says why"
SELECT = "honours_eps"
TASK = "ch01.7"
EDITS = [
    (
        "    mean = x.mean(dim=(0, 2, 3), keepdim=True)  # (1, C, 1, 1)\n",
        "    assert x.numel() > x.shape[1]\n"
        "    mean = x.mean(dim=(0, 2, 3), keepdim=True)  # (1, C, 1, 1)\n",
    )
]
