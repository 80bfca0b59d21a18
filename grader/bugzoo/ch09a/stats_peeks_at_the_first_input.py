"""compile_stats peeks at the first item (to look at it before compiling) and then iterates
inputs again: a list is read twice unharmed, a generator loses its first call."""

EXPECT = r"read only once"
SELECT = "any_iterable"

EDITS = [
    (
        "    calls = [_as_args(c) for c in inputs]\n",
        "    first = next(iter(inputs), None)  # look at one call before compiling\n"
        "    calls = [_as_args(c) for c in inputs] if first is not None else []\n",
    )
]
