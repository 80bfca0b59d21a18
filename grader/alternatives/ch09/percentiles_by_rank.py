"""time_fn computes the median and the 10th / 90th percentiles itself, by linear
interpolation between sorted times (numpy's default method), instead of asking the
statistics module: any standard percentile definition is the contract."""


def _percentile(sorted_times, q):
    pos = (len(sorted_times) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_times) - 1)
    return sorted_times[lo] + (sorted_times[hi] - sorted_times[lo]) * (pos - lo)


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    if iters < 1:
        raise ValueError("time_fn needs iters >= 1")
    sync, clock = _sync_and_clock(device, sync, clock)
    times = []
    for _ in range(warmup + iters):
        sync()
        start = clock()
        fn()
        sync()
        times.append((clock() - start) * 1000.0)
    first, timed = times[0], sorted(times[warmup:])
    return Timing(_percentile(timed, 0.5), _percentile(timed, 0.1), _percentile(timed, 0.9), first)
