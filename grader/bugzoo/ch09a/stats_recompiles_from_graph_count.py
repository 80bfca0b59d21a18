"""Recompiles are counted as graphs - 1: right for a whole-graph function, but the second
graph of a function with a break is a resume function, not a recompile."""

EXPECT = r"graphs - 1|resume"
SELECT = "compile_stats or each_piece"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    stats = _reference_compile_stats(fn, inputs, **compile_kwargs)
    return stats._replace(recompiles=max(0, stats.graphs - 1))
