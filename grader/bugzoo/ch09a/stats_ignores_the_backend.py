"""compile_stats drops the backend it was given and always compiles with "eager"."""

EXPECT = r"backend"
SELECT = "forwards_the_backend"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    compile_kwargs.pop("backend", None)
    return _reference_compile_stats(fn, inputs, **compile_kwargs)
