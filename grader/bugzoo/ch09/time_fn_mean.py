"""time_fn reports the mean as its central figure: one slow call drags it up."""

EXPECT = r"median"
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
    cuts = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
    return Timing(statistics.mean(times), cuts[0], cuts[-1], first)
