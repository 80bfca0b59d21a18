"""Only modules and parameters count as registered: a list or dict that points at a
registered buffer is reported as if the buffer were a stray tensor."""

EXPECT = r"buffers|registered"
SELECT = "unregistered or aliases"


def unregistered_state(model: nn.Module) -> list[str]:
    """Dotted paths of attributes holding modules or tensors that PyTorch did not register.

    Searches ``model`` and its registered submodules for plain attributes that are (or are
    lists, tuples or dicts holding) modules or tensors, e.g. ``encoder.blocks[0]``,
    ``norm.mean``, ``heads['a']`` (dict keys as repr). Objects registered somewhere in the
    model are not reported; an unregistered object is reported once, not searched inside.
    """
    registered = {id(m) for m in model.modules()}
    registered |= {id(p) for p in model.parameters()}
    found: list[str] = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name in _MODULE_INTERNALS:
                continue
            _collect(value, f"{prefix}.{name}" if prefix else name, registered, found)
    return found
