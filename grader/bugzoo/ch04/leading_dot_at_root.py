"""Joins every path as f"{prefix}.{name}", so attributes of the root model itself come out
as ".extra[0]" (named_modules() gives the root the empty prefix)."""

EXPECT = r"root|prefix"
SELECT = "unregistered or deep_paths"


def unregistered_state(model):
    registered = {id(m) for m in model.modules()}
    registered |= {id(p) for p in model.parameters()}
    registered |= {id(b) for b in model.buffers()}
    found = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name in _MODULE_INTERNALS:
                continue
            _collect(value, f"{prefix}.{name}", registered, found)
    return found
