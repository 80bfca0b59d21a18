"""The durations are reported in milliseconds (perf_counter differences times 1000): every
ratio between them is right, every value is a thousand times too large."""

EXPECT = r"seconds"
SELECT = "wait or consumer or separated or durations"

_timed = time_loader


def time_loader(loader, consume, max_batches=None):
    t = _timed(loader, consume, max_batches)
    return LoaderTiming(t.wait_s * 1000, t.compute_s * 1000, t.batches)
