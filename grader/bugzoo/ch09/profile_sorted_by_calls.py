"""Operators are ranked by how often they ran: the many cheap calls hide the one
expensive one."""

EXPECT = r"time"
SELECT = "profile"


def profile_top_ops(fn, n):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [
        OpStat(e.key, e.self_cpu_time_total / 1000.0, int(e.count)) for e in prof.key_averages()
    ]
    rows.sort(key=lambda r: r.calls, reverse=True)
    return rows[:n]
