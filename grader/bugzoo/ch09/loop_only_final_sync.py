"""The loop synchronizes before the final clock read but not before the first: work a
previous loop left on the device is billed to this one."""

EXPECT = r"before starting the clock"
SELECT = "ms_per_step"


def ms_per_step(step, steps, device="cpu", sync=None, clock=None):
    sync, clock = _sync_and_clock(device, sync, clock)
    start = clock()
    for _ in range(steps):
        step()
    sync()
    return (clock() - start) * 1000.0 / steps
