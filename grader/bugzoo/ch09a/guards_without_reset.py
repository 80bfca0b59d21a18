"""guard_reasons compiles without resetting Dynamo: a function compiled before is served
from the cache, so the second call matches an old graph and no guard fails."""

EXPECT = r"reset|cache|again"
SELECT = "guard_reasons"


def guard_reasons(fn, first, second, **compile_kwargs):
    backend = compile_kwargs.pop("backend", "eager")
    compiled = torch.compile(fn, backend=backend, **compile_kwargs)
    compiled(*_as_args(first))
    guard_failures.clear()
    compiled(*_as_args(second))
    return [_classify(text) for texts in guard_failures.values() for text in texts]
