"""step_report measures 'moved' as the norm of the whole change, not its largest entry."""

EXPECT = r"single entry"
SELECT = "step_report"


def step_report(before, params):
    rows = []
    for name, p in params.items():
        grad = p.grad if p.is_leaf else None
        finite = bool(torch.isfinite(p).all()) and (
            grad is None or bool(torch.isfinite(grad).all())
        )
        rows.append(
            StepRow(
                name,
                p.is_leaf,
                grad is None,
                0.0 if grad is None else grad.norm().item(),
                finite,
                (p.detach() - before[name]).norm().item(),
            )
        )
    return rows
