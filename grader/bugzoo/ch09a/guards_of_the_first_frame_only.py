"""guard_reasons reads only the guard failures of fn's own code object: after a graph break
the resume frames' failed guards are missed."""

EXPECT = r"graph break|failing frame"
SELECT = "guard_reasons"


def guard_reasons(fn, first, second, **compile_kwargs):
    backend = compile_kwargs.pop("backend", "eager")
    torch.compiler.reset()
    compiled = torch.compile(fn, backend=backend, **compile_kwargs)
    compiled(*_as_args(first))
    guard_failures.clear()
    compiled(*_as_args(second))
    found = [_classify(text) for text in guard_failures.get(fn.__code__, [])]
    torch.compiler.reset()
    return found
