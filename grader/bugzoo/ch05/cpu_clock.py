"""Timed with time.process_time: CPU time of this process, which stands still while the
loader sleeps (disk, network) or while worker processes do the work."""

EXPECT = r"wall clock|wall-clock"
SELECT = "not workers and not worker and not sleep_bound and not cpu_bound"


def time_loader(loader, consume, max_batches=None):
    clock = time.process_time
    wait_s = compute_s = 0.0
    batches = 0
    asked = clock()
    it = iter(loader)
    while max_batches is None or batches < max_batches:
        try:
            batch = next(it)
        except StopIteration:
            break
        got = clock()
        wait_s += got - asked
        consume(batch)
        asked = clock()
        compute_s += asked - got
        batches += 1
    del it
    return LoaderTiming(wait_s, compute_s, batches)
