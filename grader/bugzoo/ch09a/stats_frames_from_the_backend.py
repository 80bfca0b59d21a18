"""Frames are counted at the backend, like graphs: a resume frame with no tensor op compiles
without a graph, so it goes uncounted."""

EXPECT = r"frames"
SELECT = "frames_are_not_graphs"

_reference_compile_stats = compile_stats


def compile_stats(fn, inputs, **compile_kwargs):
    stats = _reference_compile_stats(fn, inputs, **compile_kwargs)
    return stats._replace(frames=stats.graphs)
