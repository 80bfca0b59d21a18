"""The batch-size check refuses exactly one row: an empty training batch passes it, its mean
is 0 / 0, and both running buffers hold NaN from then on."""

EXPECT = r"zero rows"
SELECT = "empty_training"
TASK = "ch04.4"
EDITS = [
    (
        "            if x.shape[0] < 2:  # the unbiased variance of one row is 0 / 0\n",
        "            if x.shape[0] == 1:  # the unbiased variance of one row is 0 / 0\n",
    )
]
