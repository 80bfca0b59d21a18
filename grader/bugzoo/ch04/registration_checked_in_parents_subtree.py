"""Each module's plain attributes are checked against what its parent registered (the
parent's whole subtree: the module itself and its siblings), not against the whole model:
a list two levels down that keeps a buffer or parameter of the root is reported although
the root registered it."""

EXPECT = r"registered from the whole model"
SELECT = "unregistered"
TASK = "ch04.2"


def unregistered_state(model):
    found = []
    parents = {"": model}
    for prefix, module in model.named_modules():
        for child_name in dict(module.named_children()):
            parents.setdefault(f"{prefix}.{child_name}" if prefix else child_name, module)
        scope = parents.get(prefix, model)
        registered = {id(m) for m in scope.modules()}
        registered |= {id(p) for p in scope.parameters()}
        registered |= {id(b) for b in scope.buffers()}
        for name, value in vars(module).items():
            if name in _MODULE_INTERNALS:
                continue
            _collect(value, f"{prefix}.{name}" if prefix else name, registered, found)
    return found
