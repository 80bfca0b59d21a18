"""unregistered_state walks every entry of each module's __dict__, including nn.Module's
own registries, so registered parameters show up as findings."""

EXPECT = r"bookkeeping"
SELECT = "unregistered"


def unregistered_state(model):
    found = []
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            _collect(value, f"{prefix}.{name}" if prefix else name, set(), found)
    return found
