"""The warm-up calls are timed and kept in the statistics, so cold-start costs leak into
the percentiles."""

EXPECT = r"warm-up"
SELECT = "time_fn"


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)

    def one_call():
        sync()
        start = clock()
        fn()
        sync()
        return (clock() - start) * 1000.0

    times = [one_call() for _ in range(max(0, warmup) + iters)]
    cuts = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
    return Timing(statistics.median(times), cuts[0], cuts[-1], times[0])
