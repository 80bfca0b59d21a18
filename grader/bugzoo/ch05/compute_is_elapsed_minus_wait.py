"""compute_s is derived instead of measured: total elapsed time minus wait_s. The final
fetch that finds the end of the data and the shutdown of the iterator (joining the
workers) are then booked as consumer work."""

EXPECT = r"consume"
SELECT = "compute or consum or end_of_data or shut"
TASK = "ch05.1"


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
    start = asked = clock()
    wait_s = 0.0
    batches = 0
    it = iter(loader)
    try:
        while max_batches is None or batches < max_batches:
            try:
                batch = next(it)
            except StopIteration:
                break
            wait_s += clock() - asked
            consume(batch)
            asked = clock()
            batches += 1
    finally:
        del it
    return LoaderTiming(wait_s, clock() - start - wait_s, batches)
