"""The diagnostic runs its steps on the caller's own model and optimizer instead of a
copy, so diagnosing a run changes it."""

EXPECT = r"copy|changed its argument `model`"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    real_deepcopy = copy.deepcopy
    copy.deepcopy = lambda obj, memo=None: obj  # the solution's copy becomes the original
    try:
        return _solution_diagnose(model, optimizer, loss_fn, batch, steps)
    finally:
        copy.deepcopy = real_deepcopy
