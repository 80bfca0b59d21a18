"""The clock is restarted only when a batch is requested after the previous one was fully
processed, but read once per loop: consume's work is counted as waiting too."""

EXPECT = r"consum"
SELECT = "not workers and not worker and not sleep_bound and not cpu_bound"


def time_loader(loader, consume, max_batches=None):
    wait_s = compute_s = 0.0
    batches = 0
    it = iter(loader)
    last = time.perf_counter()
    while max_batches is None or batches < max_batches:
        try:
            batch = next(it)
        except StopIteration:
            break
        got = time.perf_counter()
        consume(batch)
        done = time.perf_counter()
        compute_s += done - got
        wait_s += done - last  # from the previous request to the end of this batch's work
        last = done
        batches += 1
    del it
    return LoaderTiming(wait_s, compute_s, batches)
