"""time_fn reports the fastest and the slowest timed call as p10 and p90: one outlier
becomes the whole spread."""

EXPECT = r"p10|p90|percentile"
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
    return Timing(statistics.median(times), min(times), max(times), first)
