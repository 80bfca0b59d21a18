"""Every parameter that requires grad is taken to be reachable: requires_grad says a
gradient may be recorded, not that a path from this loss leads to it."""

EXPECT = r"next_functions"
SELECT = "reachable"


def reachable_params(loss, named_params):
    pairs = list(named_params.items() if isinstance(named_params, Mapping) else named_params)
    return {name: bool(p.requires_grad) for name, p in pairs}
