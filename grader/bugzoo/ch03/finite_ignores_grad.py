"""step_report's finite looks at the tensor only, so a nan or inf gradient (the first sign
of a blow-up) is reported healthy."""

EXPECT = r"gradient holds|inf or nan"
SELECT = "step_report"


def step_report(before, params):
    rows = []
    for name, p in params.items():
        grad = p.grad if p.is_leaf else None
        rows.append(
            StepRow(
                name=name,
                is_leaf=p.is_leaf,
                grad_is_none=grad is None,
                grad_norm=0.0 if grad is None else grad.norm().item(),
                finite=bool(torch.isfinite(p).all()),
                moved=(p.detach() - before[name]).abs().max().item(),
            )
        )
    return rows
