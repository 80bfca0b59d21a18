"""Checkpoints are kept in a module-level dict keyed by path; the file written is only a
marker, so a copy of the file restores nothing."""

EXPECT = r"in the file"
SELECT = "checkpoint"


_STORE = {}


def save_checkpoint(path, model, optimizer=None, **extra):
    path = Path(path)
    _STORE[str(path)] = (
        {k: v.clone() for k, v in model.state_dict().items()},
        None if optimizer is None else copy.deepcopy(optimizer.state_dict()),
        dict(extra),
    )
    path.write_text("checkpoint")
    return path


def load_checkpoint(path, model, optimizer=None):
    state, opt_state, extra = _STORE[str(Path(path))]
    model.load_state_dict(state)
    if optimizer is not None:
        optimizer.load_state_dict(opt_state)
    return dict(extra)


import copy  # noqa: E402
