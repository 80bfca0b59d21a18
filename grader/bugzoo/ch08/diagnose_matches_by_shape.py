"""Optimizer coverage is checked by shape: the old head has the same shapes as the new
one, so the book's bug goes unreported."""

EXPECT = r"identity"
SELECT = "diagnose"

_solution_diagnose = diagnose


def diagnose(model, optimizer, loss_fn, batch, steps):
    held = {tuple(p.shape) for g in optimizer.param_groups for p in g["params"]}
    return [
        f
        for f in _solution_diagnose(model, optimizer, loss_fn, batch, steps)
        if not (
            f.code == "not_in_optimizer"
            and tuple(dict(model.named_parameters())[f.where].shape) in held
        )
    ]
