"""Reachability is judged on the first step only: a parameter the forward starts using
later is reported as no_grad."""

EXPECT = r"every backward|every step"
SELECT = "no_grad"

EDITS = [
    (
        """\
            if p.grad is not None:
                got_grad.add(n)
""",
        """\
            if p.grad is not None and len(losses) == 1:
                got_grad.add(n)
            if p.grad is not None:
""",
    ),
]
