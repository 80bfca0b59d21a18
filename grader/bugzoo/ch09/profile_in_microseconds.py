"""self_ms holds the profiler's self_cpu_time_total as it comes, in microseconds."""

EXPECT = r"microseconds"
SELECT = "profile"


def profile_top_ops(fn, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [OpStat(e.key, e.self_cpu_time_total, int(e.count)) for e in prof.key_averages()]
    rows.sort(key=lambda r: r.self_ms, reverse=True)
    return rows[: max(0, n)]
