"""What the optimizer holds is matched with the model's parameters by value (same shape,
dtype and values) instead of identity: an optimizer over clones looks complete, and a
layer equal to a held one looks held."""

EXPECT = r"id\(p\)"
SELECT = "diagnose"

_solution_diagnose = diagnose


def _same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.detach(), b.detach())


def diagnose(model, optimizer, loss_fn, batch, steps):
    params = list(model.parameters())
    groups = []
    for g in optimizer.param_groups:
        mine = [p for p in params if any(_same(p, q) for q in g["params"])]
        others = [q for q in g["params"] if not any(_same(p, q) for p in params)]
        groups.append({**g, "params": mine + others})
    seen = type(optimizer)(groups, **optimizer.defaults)
    return _solution_diagnose(model, seen, loss_fn, batch, steps)
