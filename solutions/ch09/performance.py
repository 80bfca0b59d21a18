"""ch09 — CUDA and performance: time asynchronous work honestly, find the expensive ops,
and account for memory. Reference solution."""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch


class Timing(NamedTuple):
    """Per-call times in milliseconds of the timed (post-warm-up) calls, and the first call."""

    median_ms: float
    p10_ms: float
    p90_ms: float
    first_ms: float  # the very first call, warm-up effects included


class OpStat(NamedTuple):
    """One row of a profile: operator name, its self CPU time in ms, and how often it ran."""

    name: str
    self_ms: float
    calls: int


class SimulatedGPU:
    """A toy asynchronous device for experiments: ``step()`` costs the host ``launch_ms`` and
    queues ``kernel_ms`` of device work; at most ``queue_depth`` steps may be outstanding
    (the host then blocks). ``clock()`` returns seconds; ``synchronize()`` waits for the queue."""

    def __init__(self, launch_ms: float = 4.9, kernel_ms: float = 16.0, queue_depth: int = 9):
        self.launch_ms, self.kernel_ms, self.queue_depth = launch_ms, kernel_ms, queue_depth
        self.now_ms = 0.0
        self._ends: deque[float] = deque()  # device finish times of outstanding steps

    def clock(self) -> float:
        return self.now_ms / 1000.0

    def _retire(self) -> None:
        while self._ends and self._ends[0] <= self.now_ms:
            self._ends.popleft()

    def step(self) -> None:
        self._retire()
        if len(self._ends) >= self.queue_depth:  # queue full: the host waits for a slot
            self.now_ms = self._ends[len(self._ends) - self.queue_depth]
            self._retire()
        self.now_ms += self.launch_ms
        start = max(self.now_ms, self._ends[-1] if self._ends else 0.0)
        self._ends.append(start + self.kernel_ms)

    def synchronize(self) -> None:
        if self._ends:
            self.now_ms = max(self.now_ms, self._ends[-1])
        self._ends.clear()


def _sync_and_clock(
    device: str | torch.device, sync: Callable[[], Any] | None, clock: Callable[[], float] | None
) -> tuple[Callable[[], Any], Callable[[], float]]:
    device = torch.device(device)
    if sync is None:
        if device.type == "cuda":

            def sync() -> None:
                torch.cuda.synchronize(device)
        else:

            def sync() -> None:
                return None

    return sync, clock or time.perf_counter


def time_fn(
    fn: Callable[[], Any],
    warmup: int,
    iters: int,
    device: str | torch.device,
    sync: Callable[[], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> Timing:
    """Time ``fn()`` per call: ``warmup`` untimed calls, then ``iters`` timed ones.

    The device is synchronized before every clock read (``sync`` defaults to
    ``torch.cuda.synchronize`` on CUDA, nothing on CPU; ``clock`` to ``time.perf_counter``,
    in seconds). Returns ``Timing`` in ms; ``first_ms`` is the very first call. ``iters``
    must be at least 1 (ValueError otherwise).
    """
    if iters < 1:
        raise ValueError("time_fn needs iters >= 1")
    sync, clock = _sync_and_clock(device, sync, clock)

    def one_call() -> float:
        sync()  # nothing queued earlier may land inside this measurement
        start = clock()
        fn()
        sync()  # the work fn queued must be finished before we read the clock
        return (clock() - start) * 1000.0

    first = one_call()
    times = [first] if warmup <= 0 else []
    for _ in range(max(0, warmup - 1)):
        one_call()
    while len(times) < iters:
        times.append(one_call())
    if len(times) == 1:
        p10 = p90 = times[0]
    else:
        cuts = statistics.quantiles(times, n=10, method="inclusive")
        p10, p90 = cuts[0], cuts[-1]
    return Timing(statistics.median(times), p10, p90, first)


def ms_per_step(
    step: Callable[[], Any],
    steps: int,
    device: str | torch.device = "cpu",
    sync: Callable[[], Any] | None = None,
    clock: Callable[[], float] | None = None,
) -> float:
    """Throughput of a training loop: ms per step over ``steps`` back-to-back calls of
    ``step()``, counting all the device work they queued (and none queued before)."""
    sync, clock = _sync_and_clock(device, sync, clock)
    sync()  # drain work queued before the loop
    start = clock()
    for _ in range(steps):
        step()  # no sync inside: the host may run ahead, that is the point of a queue
    sync()  # the loop is finished when the device is, not when the host is
    return (clock() - start) * 1000.0 / steps


def profile_top_ops(fn: Callable[[], Any], n: int) -> list[OpStat]:
    """Run ``fn()`` once under ``torch.profiler`` (CPU activity); return the ``n`` operators
    with the largest self CPU time, largest first, as ``OpStat(name, self_ms, calls)``."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    rows = [
        OpStat(e.key, e.self_cpu_time_total / 1000.0, int(e.count)) for e in prof.key_averages()
    ]
    rows.sort(key=lambda r: r.self_ms, reverse=True)
    return rows[: max(0, n)]


def estimate_activation_mb(
    batch: int, widths: Sequence[int], dtype: torch.dtype = torch.float32
) -> float:
    """MiB that autograd keeps for backward in an MLP Linear -> ReLU -> ... -> Linear with
    layer sizes ``widths`` = (d0, ..., dk) on a (batch, d0) input: every Linear's input,
    i.e. batch * (d0 + ... + d_{k-1}) elements (a ReLU's saved output is the next input)."""
    element = torch.empty((), dtype=dtype).element_size()
    return batch * sum(widths[:-1]) * element / 2**20


def peak_memory_mb(
    fn: Callable[[], Any], device: str | torch.device = "cuda", memory: Any = None
) -> float:
    """Peak MiB allocated while ``fn()`` runs, above what was allocated before it.

    ``memory`` provides ``synchronize``, ``reset_peak_memory_stats``, ``memory_allocated``
    and ``max_memory_allocated`` (default: ``torch.cuda`` on ``device``).
    """
    if memory is None:
        with torch.cuda.device(torch.device(device)):
            return peak_memory_mb(fn, device, memory=torch.cuda)
    memory.synchronize()
    memory.reset_peak_memory_stats()  # forget peaks from earlier work
    before = memory.memory_allocated()  # weights and inputs already there
    fn()
    memory.synchronize()
    return (memory.max_memory_allocated() - before) / 2**20
