"""Model and optimizer are deep-copied one at a time: the copied optimizer holds copies
of its own, not the copied model's parameters, so every parameter looks unregistered."""

EXPECT = r"copy them together"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    real_deepcopy = copy.deepcopy

    def separately(obj, memo=None):
        if isinstance(obj, tuple):
            return tuple(real_deepcopy(o) for o in obj)
        return real_deepcopy(obj, memo)

    copy.deepcopy = separately
    try:
        return _solution_diagnose(model, optimizer, loss_fn, batch, steps)
    finally:
        copy.deepcopy = real_deepcopy
