"""A tensor attribute counts as registered when it shares a parameter's or buffer's memory,
so a view kept as a plain attribute (weight.t(), a buffer's .view) is never reported,
although state_dict() does not save it and .to() leaves it behind."""

EXPECT = r"view"
SELECT = "copies_by_identity"


def _collect(value, path, registered, found):
    if isinstance(value, Tensor):
        if value.untyped_storage().data_ptr() not in _STORAGES:
            found.append(path)
    elif isinstance(value, nn.Module):
        if id(value) not in registered:
            found.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect(item, f"{path}[{i}]", registered, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, f"{path}[{key!r}]", registered, found)


_STORAGES: set[int] = set()
_by_identity = unregistered_state


def unregistered_state(model):
    _STORAGES.clear()
    _STORAGES.update(
        t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]
    )
    return _by_identity(model)
