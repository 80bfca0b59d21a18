"""Tensors directly inside the outer container are hashed by their bytes, but a container
nested in it is hashed by its printed form: rounding and eliding hide a change deeper down."""

EXPECT = r"nested"
SELECT = "fingerprint"


def fingerprint(obj):
    h = hashlib.sha256()
    if isinstance(obj, Mapping):
        items = list(obj.items())
    elif isinstance(obj, (list, tuple)):
        items = list(enumerate(obj))
    else:
        items = [(None, obj)]
    for key, value in items:
        _feed(h, key)
        if isinstance(value, torch.Tensor):
            _feed(h, value)
        else:
            h.update(f"R{value!r};".encode())
    return h.hexdigest()
