"""Losses are only compared with each other; a nan compares False with everything, so a
run that overflowed gets no finding for it."""

EXPECT = r"nonfinite|overflow"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    found = _solution_diagnose(model, optimizer, loss_fn, batch, steps)
    return [f for f in found if f.code != "nonfinite"]
