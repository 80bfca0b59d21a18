"""The tolerance band is written half-open, want - limit < stat <= want + limit (the habit of
histogram bins): a mean exactly tol * channel_std below the contract's, or at tol 1 a constant
channel (std 0, exactly channel_std below), does not fit, while the upper end still does."""

EXPECT = r"closed band|bound belongs"
SELECT = "tolerance_boundary"
TASK = "ch05a.2"
EDITS = [
    (
        "fits = ((mean[:, None] - want_mean).abs() <= limit) & ((std[:, None] - want_std).abs() <= limit)",
        "def inside(got, want):\n"
        "        return (got[:, None] > want - limit) & (got[:, None] <= want + limit)\n\n"
        "    fits = inside(mean, want_mean) & inside(std, want_std)",
    )
]
