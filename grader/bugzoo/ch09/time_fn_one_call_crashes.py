"""time_fn always asks statistics.quantiles for the percentiles, which needs two values:
iters=1 raises instead of reporting its one call."""

EXPECT = r"one timed call"
SELECT = "time_fn"


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)

    def one_call():
        sync()
        start = clock()
        fn()
        sync()
        return (clock() - start) * 1000.0

    first = one_call()
    times = [first] if warmup <= 0 else []
    for _ in range(max(0, warmup - 1)):
        one_call()
    while len(times) < iters:
        times.append(one_call())
    cuts = statistics.quantiles(times, n=10, method="inclusive")
    return Timing(statistics.median(times), cuts[0], cuts[-1], first)
