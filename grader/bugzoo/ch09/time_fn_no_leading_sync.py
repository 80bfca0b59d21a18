"""time_fn synchronizes only after fn: work queued before time_fn was called lands in
the first measurement."""

EXPECT = r"before starting the clock"
SELECT = "time_fn"


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)

    def one_call():
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
    cuts = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
    return Timing(statistics.median(times), cuts[0], cuts[-1], first)
