"""compile_stats uses a backend that already counts (it has frame_count) as its own counter,
so the graphs that counter saw before the call are reported as this run's."""

EXPECT = r"this run's only"
SELECT = "callers_counts"

EDITS = [
    (
        "    counting = CompileCounterWithBackend(backend)",
        "    counting = (\n"
        '        backend if hasattr(backend, "frame_count") else CompileCounterWithBackend(backend)\n'
        "    )",
    ),
]
