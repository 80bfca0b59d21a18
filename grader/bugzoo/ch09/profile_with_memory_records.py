"""The profile is taken with ``profile_memory=True`` (as the profiler recipe does): the
allocator's events come back as a "[memory]" row beside the operators, though it is no
operator fn ran."""

EXPECT = r"not an operator"
SELECT = "op_stats"

EDITS = [
    (
        "    with profile(activities=[ProfilerActivity.CPU]) as prof:\n",
        "    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:\n",
    ),
]
