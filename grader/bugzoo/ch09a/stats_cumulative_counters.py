"""compile_stats resets Dynamo but reads counters["frames"]["ok"] as an absolute number;
torch.compiler.reset() does not clear the counters, so earlier compilations are counted."""

EXPECT = r"counter"
SELECT = "compile_stats or counts_ignore or each_piece"


def compile_stats(fn, inputs, **compile_kwargs):
    calls = [_as_args(c) for c in inputs]
    backend = compile_kwargs.pop("backend", "eager")
    torch.compiler.reset()
    clear_compilation_metrics()  # a bounded deque (64 entries): start it empty
    counting = CompileCounterWithBackend(backend)
    compiled = torch.compile(fn, backend=counting, **compile_kwargs)
    for args in calls:
        compiled(*args)
    reasons = [t for texts in guard_failures.values() for t in texts]
    recompiles = sum(
        1
        for m in get_compilation_metrics()
        if m.fail_type is None and int(str(m.compile_id).split("/")[-1]) > 0
    )
    graph_breaks = torch._dynamo.explain(fn)(*calls[0]).graph_break_count if calls else 0
    return CompileStats(
        counters["frames"]["ok"], counting.frame_count, graph_breaks, recompiles, reasons
    )
