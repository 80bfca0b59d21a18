"""The first n rows of key_averages() (operators in the order they first ran) are kept and
only then sorted: an expensive operator that ran last is cut."""

EXPECT = r"first n"
SELECT = "profile"


def profile_top_ops(fn, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [
        OpStat(e.key, e.self_cpu_time_total / 1000.0, int(e.count)) for e in prof.key_averages()
    ]
    top = rows[: max(0, n)]
    top.sort(key=lambda r: r.self_ms, reverse=True)
    return top
