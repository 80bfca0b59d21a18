"""compile_stats never resets Dynamo, so a function compiled earlier in the process is
served from the cache and the second run counts (almost) nothing."""

EXPECT = r"reset|cache"
SELECT = "compile_stats or counts_ignore or each_piece"


def compile_stats(fn, inputs, **compile_kwargs):
    calls = [_as_args(c) for c in inputs]
    backend = compile_kwargs.pop("backend", "eager")
    frames_before = counters["frames"]["ok"]
    clear_compilation_metrics()  # a bounded deque (64 entries): start it empty
    failures_before = sum(len(v) for v in guard_failures.values())
    counting = CompileCounterWithBackend(backend)
    compiled = torch.compile(fn, backend=counting, **compile_kwargs)
    first_call_graphs = None
    for args in calls:
        compiled(*args)
        if first_call_graphs is None:
            first_call_graphs = counting.frame_count
    frames = counters["frames"]["ok"] - frames_before
    reasons = [t for texts in guard_failures.values() for t in texts][failures_before:]
    recompiles = sum(
        1
        for m in get_compilation_metrics()
        if m.fail_type is None and int(str(m.compile_id).split("/")[-1]) > 0
    )
    graph_breaks = max(0, (first_call_graphs or 0) - 1)  # no explain(): it would reset Dynamo
    return CompileStats(frames, counting.frame_count, graph_breaks, recompiles, reasons)
