"""Only losses and gradients are checked for inf/nan; a parameter stepped to inf by the
last update is never looked at."""

EXPECT = r"parameters' values"
SELECT = "nonfinite"

EDITS = [
    (
        """\
    for n, p in named.items():
        if not torch.isfinite(p.detach()).all():
            nonfinite.setdefault(n, "its values became non-finite")
""",
        "",
    ),
]
