"""time_fn rounds every figure to 3 decimals (whole microseconds) for a tidy report:
sub-microsecond calls read as 0 and every figure is off by up to half a microsecond."""

EXPECT = r"median|p10|p90|first"
SELECT = "time_fn"
TASK = "ch09.1"

_exact_time_fn = time_fn


def time_fn(fn, warmup, iters, device, sync=None, clock=None):
    t = _exact_time_fn(fn, warmup, iters, device, sync, clock)
    return Timing(*(round(x, 3) for x in t))
