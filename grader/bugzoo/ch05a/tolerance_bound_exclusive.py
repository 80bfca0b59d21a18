"""The statistics must lie strictly inside the tolerance (``<`` for ``<=``): a channel whose mean
or std is exactly tol * channel_std from the contract is reported as a normalization problem,
though 'within tol' includes the bound (held-out round 11)."""

EXPECT = r"closed band|bound belongs"
SELECT = "tolerance_boundary"
TASK = "ch05a.2"
EDITS = [
    (
        "fits = ((mean[:, None] - want_mean).abs() <= limit) & ((std[:, None] - want_std).abs() <= limit)",
        "fits = ((mean[:, None] - want_mean).abs() < limit) & ((std[:, None] - want_std).abs() < limit)",
    )
]
