"""``time_fn`` reads the clock once per call boundary (each reading, taken right after a
synchronize, ends one call's interval and starts the next), uses nearest-rank percentiles
(numpy's ``inverted_cdf``), and ``peak_memory_mb`` records the baseline before resetting the peak
and passes ``device`` explicitly to each torch.cuda statistics function.
Still a synchronize before every clock read, one call's finished work per interval, a standard
percentile definition, and the same peak (after a reset the peak equals the current allocation).
"""

import functools
import statistics
from types import SimpleNamespace


def _nearest_rank(sorted_times: list[float], percent: int) -> float:
    rank = max(1, -(-percent * len(sorted_times) // 100))  # ceil in exact integer arithmetic
    return sorted_times[rank - 1]


def time_fn(
    fn: Callable[[], Any],
    warmup: int,
    iters: int,
    device: str | torch.device,
    sync: Callable[[], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> Timing:
    """Warm-up (first call reported), then ``iters`` back-to-back timed calls."""
    if iters < 1:
        raise ValueError(f"iters must be at least 1, got {iters}")
    sync, clock = _sync_and_clock(device, sync, clock)

    sync()
    mark = clock()
    fn()
    sync()
    now = clock()
    first_ms = (now - mark) * 1e3

    timed: list[float] = []
    if warmup <= 0:
        timed.append(first_ms)
    else:
        for _ in range(warmup - 1):
            fn()
        sync()
        now = clock()
    while len(timed) < iters:
        mark = now
        fn()
        sync()
        now = clock()
        timed.append((now - mark) * 1e3)

    ordered = sorted(timed)
    return Timing(
        median_ms=statistics.median(ordered),
        p10_ms=_nearest_rank(ordered, 10),
        p90_ms=_nearest_rank(ordered, 90),
        first_ms=first_ms,
    )


def _peak_above_baseline(fn: Callable[[], Any], memory: Any) -> float:
    memory.synchronize()
    baseline = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    fn()
    memory.synchronize()
    peak = memory.max_memory_allocated()
    return (peak - baseline) / (1024 * 1024)


def peak_memory_mb(
    fn: Callable[[], Any], device: str | torch.device = "cuda", memory: Any = None
) -> float:
    """Peak MiB allocated while ``fn()`` runs, above the allocation just before it."""
    if memory is not None:
        return _peak_above_baseline(fn, memory)
    dev = torch.device(device)
    ledger = SimpleNamespace(
        synchronize=functools.partial(torch.cuda.synchronize, dev),
        reset_peak_memory_stats=functools.partial(torch.cuda.reset_peak_memory_stats, dev),
        memory_allocated=functools.partial(torch.cuda.memory_allocated, dev),
        max_memory_allocated=functools.partial(torch.cuda.max_memory_allocated, dev),
    )
    with torch.cuda.device(dev):  # fn's plain "cuda" tensors land on the measured device
        return _peak_above_baseline(fn, ledger)
