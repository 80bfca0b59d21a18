"""``time_fn`` times every call, warm-up included, then slices the warm-up off and takes
``torch.quantile`` (linear, like ``statistics.quantiles(method="inclusive")``);
``profile_top_ops`` sums raw profiler events per name itself and ranks with ``heapq.nlargest``;
``estimate_activation_mb`` uses ``dtype.itemsize``; ``ms_per_step`` names its clock readings.
Same synchronization, same first call, same per-operator totals and the same estimate.
"""

import heapq
from collections import defaultdict


def time_fn(
    fn: Callable[[], Any],
    warmup: int,
    iters: int,
    device: str | torch.device,
    sync: Callable[[], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> Timing:
    """All calls timed, warm-up dropped afterwards."""
    if not iters >= 1:
        raise ValueError("iters must be a positive number of timed calls")
    do_sync, read = _sync_and_clock(device, sync, clock)
    n_warm = max(warmup, 0)
    samples = []
    for _ in range(n_warm + iters):
        do_sync()
        t0 = read()
        fn()
        do_sync()
        t1 = read()
        samples.append(1000.0 * (t1 - t0))
    kept = torch.tensor(samples[n_warm:], dtype=torch.float64)
    p10, med, p90 = torch.quantile(kept, torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64))
    return Timing(float(med), float(p10), float(p90), samples[0])


def ms_per_step(
    step: Callable[[], Any],
    steps: int,
    device: str | torch.device = "cpu",
    sync: Callable[[], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> float:
    """Synchronize, read, run all steps, synchronize, read; average in ms."""
    do_sync, read = _sync_and_clock(device, sync, clock)
    do_sync()
    begin = read()
    for _ in range(steps):
        step()
    do_sync()
    end = read()
    total_ms = (end - begin) * 1000.0
    return total_ms / steps


def profile_top_ops(fn: Callable[[], Any], n: int) -> list[OpStat]:
    """Self CPU time summed per operator name from the individual profiler events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    self_us: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for event in prof.events():
        self_us[event.name] += event.self_cpu_time_total
        calls[event.name] += 1
    top = heapq.nlargest(max(n, 0), self_us, key=self_us.__getitem__)
    return [OpStat(name, self_us[name] / 1000.0, calls[name]) for name in top]


def estimate_activation_mb(
    batch: int, widths: Sequence[int], dtype: torch.dtype = torch.float32
) -> float:
    """batch * (sum of all widths but the last) elements, in MiB."""
    widths = list(widths)
    kept_features = sum(widths) - widths[-1] if widths else 0
    return batch * kept_features * dtype.itemsize / float(1 << 20)
