"""The statistics are reset and read without synchronizing: work still queued on the
device when the peak is read is not finished."""

EXPECT = r"synchronize"
SELECT = "peak"


def peak_memory_mb(fn, device="cuda", memory=None):
    memory = memory or torch.cuda
    memory.reset_peak_memory_stats()
    before = memory.memory_allocated()
    fn()
    return (memory.max_memory_allocated() - before) / 2**20
