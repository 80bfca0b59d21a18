"""Treats every nn.Parameter as registered (a Parameter is 'a model weight'), so a tuple
of Parameters that the module never registered goes unreported."""

EXPECT = r"tuple|registered"
SELECT = "shapes_of_the_registration_bug"


def _collect(value, path, registered, found):
    if isinstance(value, nn.Parameter):
        return
    if isinstance(value, (nn.Module, Tensor)):
        if id(value) not in registered:
            found.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect(item, f"{path}[{i}]", registered, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, f"{path}[{key!r}]", registered, found)
