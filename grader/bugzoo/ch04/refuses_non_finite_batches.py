"""RunningNorm guards its buffers against a poisoned batch: a training batch holding any nan
or inf is refused with ValueError, as if it had too few rows. The contract refuses only
batches of fewer than two rows and must match BatchNorm1d, which takes such a batch (the
non-finite feature's statistics become nan, the others are normalised as usual)."""

EXPECT = r"only a batch of fewer than two rows is refused"
SELECT = "one_row"
TASK = "ch04.4"

EDITS = [
    (
        "            if x.shape[0] < 2:  # the unbiased variance of one row is 0 / 0\n",
        "            if x.shape[0] < 2 or not torch.isfinite(x).all():\n",
    )
]
