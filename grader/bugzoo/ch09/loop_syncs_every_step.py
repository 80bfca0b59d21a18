"""The loop synchronizes after every step: the number is 'honest' per call, but the
host can no longer queue ahead, so it reports launch + kernel instead of throughput."""

EXPECT = r"inside the loop"
SELECT = "ms_per_step"


def ms_per_step(step, steps, device="cpu", sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)
    sync()
    start = clock()
    for _ in range(steps):
        step()
        sync()
    return (clock() - start) * 1000.0 / steps
