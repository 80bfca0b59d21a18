"""Walks every module it can reach, registered or not, so an unregistered block is
reported together with its own submodules (encoder.blocks[0].linear, ...)."""

EXPECT = r"once|inside"
SELECT = "unregistered_state"


def _collect(value, path, registered, found):
    if isinstance(value, (nn.Module, Tensor)):
        if id(value) not in registered:
            found.append(path)
            if isinstance(value, nn.Module):
                for name, _child in value.named_modules():
                    if name:
                        found.append(f"{path}.{name}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect(item, f"{path}[{i}]", registered, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(item, f"{path}[{key!r}]", registered, found)
