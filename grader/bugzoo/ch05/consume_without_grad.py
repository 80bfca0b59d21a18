"""consume runs under torch.no_grad() "because only the time matters": the training step it
stands for can no longer call backward."""

EXPECT = r"grad"
SELECT = "grad_mode"


def time_loader(loader, consume, max_batches=None):
    clock = time.perf_counter
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
        with torch.no_grad():
            consume(batch)
        asked = clock()
        compute_s += asked - got
        batches += 1
    del it
    return LoaderTiming(wait_s, compute_s, batches)
