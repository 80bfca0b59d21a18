"""moved is the largest entry of the change with no guard: a tensor with no entries makes
.max() raise, so the report has no row for it (nor for anything else)."""

EXPECT = r"no entries gets a row"
SELECT = "step_report"


def step_report(before, params):
    rows = []
    for name, p in params.items():
        grad = p.grad if p.is_leaf else None
        finite = bool(torch.isfinite(p).all())
        if grad is not None:
            finite = finite and bool(torch.isfinite(grad).all())
        rows.append(
            StepRow(
                name=name,
                is_leaf=p.is_leaf,
                grad_is_none=grad is None,
                grad_norm=0.0 if grad is None else grad.norm().item(),
                finite=finite,
                moved=(p.detach() - before[name].detach()).abs().max().item(),
            )
        )
    return rows
