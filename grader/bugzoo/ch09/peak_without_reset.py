"""The peak statistics are never reset, so an older, larger peak is reported."""

EXPECT = r"reset|peaked before"
SELECT = "peak"


def peak_memory_mb(fn, device="cuda", memory=None):
    memory = memory or torch.cuda
    memory.synchronize()
    before = memory.memory_allocated()
    fn()
    memory.synchronize()
    return (memory.max_memory_allocated() - before) / 2**20
