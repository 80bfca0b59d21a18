"""The limit is checked after next(): one extra batch is fetched (and waited for) and then
thrown away."""

EXPECT = r"max_batches"
SELECT = "max_batches or short"


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
    wait_s = compute_s = 0.0
    batches = 0
    asked = clock()
    for batch in loader:
        got = clock()
        wait_s += got - asked
        if max_batches is not None and batches >= max_batches:
            break
        consume(batch)
        asked = clock()
        compute_s += asked - got
        batches += 1
    return LoaderTiming(wait_s, compute_s, batches)
