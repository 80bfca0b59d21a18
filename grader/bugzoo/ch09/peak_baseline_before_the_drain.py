"""The baseline is read before the device is synchronized: what work still in flight at the
call keeps (or frees) lands after the baseline, and is charged to fn's peak."""

EXPECT = r"in flight|synchronize before"
SELECT = "peak"
TASK = "ch09.5"


def peak_memory_mb(fn, device="cuda", memory=None):
    memory = memory or torch.cuda
    before = memory.memory_allocated()
    memory.synchronize()
    memory.reset_peak_memory_stats()
    fn()
    memory.synchronize()
    return (memory.max_memory_allocated() - before) / 2**20
