"""No check of the batch size: a training batch of one row divides 0 by 0 for the unbiased
variance, and running_var holds NaN from then on (BatchNorm1d refuses such a batch)."""

EXPECT = r"divides 0 by 0|one row"
SELECT = "one_row"
TASK = "ch04.4"
EDITS = [
    (
        """            if x.shape[0] < 2:  # the unbiased variance of one row is 0 / 0
                raise ValueError(
                    f"RunningNorm needs at least 2 rows per training batch to estimate a "
                    f"variance, got {x.shape[0]} (nn.BatchNorm1d refuses them too)"
                )
""",
        "",
    )
]
