"""next(it, None) marks the end of the data: a loader whose batch is None stops the loop
early, and that batch is never consumed."""

EXPECT = r"None or falsy"
SELECT = "none_or_falsy"


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
    wait_s = compute_s = 0.0
    batches = 0
    asked = clock()
    it = iter(loader)
    while max_batches is None or batches < max_batches:
        batch = next(it, None)
        if batch is None:
            break
        got = clock()
        wait_s += got - asked
        consume(batch)
        asked = clock()
        compute_s += asked - got
        batches += 1
    del it
    return LoaderTiming(wait_s, compute_s, batches)
