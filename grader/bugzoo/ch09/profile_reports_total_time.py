"""Operators are ranked and reported by total CPU time (cpu_time_total, children
included): aten::matmul outranks the aten::mm it dispatches to."""

EXPECT = r"self"
SELECT = "profile"


def profile_top_ops(fn, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [OpStat(e.key, e.cpu_time_total / 1000.0, int(e.count)) for e in prof.key_averages()]
    rows.sort(key=lambda r: r.self_ms, reverse=True)
    return rows[:n]
