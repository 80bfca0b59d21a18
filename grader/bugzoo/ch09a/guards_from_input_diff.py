"""guard_reasons compares the two calls' arguments instead of reading the guards that
failed: it reports changes Dynamo never guarded on (an unused int, a dynamic dimension)."""

EXPECT = r"guard"
SELECT = "guard_reasons"


def guard_reasons(fn, first, second, **compile_kwargs):
    import inspect

    names = list(inspect.signature(fn).parameters)
    found = []
    for name, a, b in zip(names, _as_args(first), _as_args(second)):
        if isinstance(a, torch.Tensor):
            if a.dtype != b.dtype:
                found.append(GuardReason(name, "dtype", f"tensor '{name}' dtype mismatch"))
            elif a.shape != b.shape:
                found.append(GuardReason(name, "shape", f"tensor '{name}' size mismatch"))
        elif a != b:
            found.append(GuardReason(name, "value", f"{name} == {a!r}"))
    return found
