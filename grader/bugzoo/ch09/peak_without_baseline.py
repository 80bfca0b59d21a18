"""The absolute peak is reported: weights and inputs resident before fn are counted as
if fn had allocated them."""

EXPECT = r"before|baseline|resident"
SELECT = "peak"


def peak_memory_mb(fn, device="cuda", memory=None):
    memory = memory or torch.cuda
    memory.synchronize()
    memory.reset_peak_memory_stats()
    fn()
    memory.synchronize()
    return memory.max_memory_allocated() / 2**20
