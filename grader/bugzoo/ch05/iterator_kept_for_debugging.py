"""Every iterator time_loader creates is kept in a module-level list 'for debugging': after
an early stop the DataLoader iterator never goes away, and neither do its workers."""

EXPECT = r"worker"
SELECT = "stopping or workers_cut"

_recent = []


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
    wait_s = compute_s = 0.0
    batches = 0
    asked = clock()
    it = iter(loader)
    _recent.append(it)
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
    return LoaderTiming(wait_s, compute_s, batches)
