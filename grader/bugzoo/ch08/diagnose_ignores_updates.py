"""Only gradients are inspected, never whether the parameters actually changed: lr 0 and
gradients cleared before the step look healthy."""

EXPECT = r"not_moving|never moved|none moves"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    found = _solution_diagnose(model, optimizer, loss_fn, batch, steps)
    return [f for f in found if f.code != "not_moving"]
