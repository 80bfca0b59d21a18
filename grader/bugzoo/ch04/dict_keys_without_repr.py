"""unregistered_state names dict entries with str(key): heads[cls] instead of heads['cls'],
and the int 0 and the string '0' collapse into one path."""

EXPECT = r"repr"
SELECT = "dict_keys"


def _collect(value, path, registered, found):
    if isinstance(value, (nn.Module, Tensor)):
        if id(value) not in registered:
            found.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect(item, f"{path}[{i}]", registered, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, f"{path}[{key}]", registered, found)
