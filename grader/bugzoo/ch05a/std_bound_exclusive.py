"""The mean is compared with ``<=`` but the std with ``<``: a channel whose std is exactly
tol * channel_std from the contract's (at tol 1, a constant channel: std 0) does not fit, though
'within tol' includes the bound for both statistics."""

EXPECT = r"closed band|bound belongs"
SELECT = "tolerance_boundary"
TASK = "ch05a.2"
EDITS = [
    (
        "((std[:, None] - want_std).abs() <= limit)",
        "((std[:, None] - want_std).abs() < limit)",
    )
]
