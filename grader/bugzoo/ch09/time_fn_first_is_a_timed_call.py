"""first_ms is taken from the first *timed* call, after the warm-up: the cold start the
warm-up absorbed is never reported."""

EXPECT = r"first"
SELECT = "time_fn"


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)

    def one_call():
        sync()
        start = clock()
        fn()
        sync()
        return (clock() - start) * 1000.0

    for _ in range(warmup):
        one_call()
    times = [one_call() for _ in range(iters)]
    cuts = (
        statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else [times[0]] * 9
    )
    return Timing(statistics.median(times), cuts[0], cuts[-1], times[0])
