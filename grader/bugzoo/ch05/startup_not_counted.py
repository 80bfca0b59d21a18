"""The iterator is created before the clock starts, so worker start-up never shows up as
waiting."""

EXPECT = r"iter\(loader\)|creating the iterator"
SELECT = "starting or short or separated"


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
    wait_s = compute_s = 0.0
    batches = 0
    it = iter(loader)
    asked = clock()
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
