"""Graph breaks are read from counters["graph_break"] alone; a data-dependent branch is
filed under counters["unimplemented"], so it goes uncounted."""

EXPECT = r"data-dependent|unimplemented"
SELECT = "compile_stats or counts_ignore or each_piece"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    before = sum(counters["graph_break"].values())
    stats = _reference_compile_stats(fn, inputs, **compile_kwargs)
    calls = max(1, len(list(inputs)))
    breaks = (sum(counters["graph_break"].values()) - before) // calls
    return stats._replace(graph_breaks=breaks)
