"""Containers are searched one level deep: a list inside a dict, or a tuple inside a
list, is never opened."""

EXPECT = r"inside each other|any depth"
SELECT = "unregistered or deep_paths"


def _collect(value: Any, path: str, registered: set[int], found: list[str]) -> None:
    if isinstance(value, (nn.Module, Tensor)):
        if id(value) not in registered:
            found.append(path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            if isinstance(item, (nn.Module, Tensor)) and id(item) not in registered:
                found.append(f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (nn.Module, Tensor)) and id(item) not in registered:
                found.append(f"{path}[{key!r}]")
