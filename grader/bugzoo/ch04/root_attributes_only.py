"""unregistered_state looks only at the root module's own attributes, so a plain list
inside a submodule (encoder.blocks) goes unseen."""

EXPECT = r"each registered module"
SELECT = "unregistered"


def unregistered_state(model):
    registered = {id(m) for m in model.modules()}
    registered |= {id(p) for p in model.parameters()} | {id(b) for b in model.buffers()}
    found = []
    for name, value in vars(model).items():
        if name not in _MODULE_INTERNALS:
            _collect(value, name, registered, found)
    return found
