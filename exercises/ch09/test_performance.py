"""Public tests for ch09 — run with `pytest exercises/ch09` (add `--impl solutions` to see
the reference pass).

Timing logic is proven on CPU with a fake asynchronous device: calling it queues work and
costs the host only the launch; the queued work finishes in fake time, and the fake clock
only shows it once someone synchronizes. No real sleeping, so the numbers are exact.
Tests marked `cuda` run the same ideas on a real GPU and are skipped elsewhere."""

from collections import deque

import pytest
import torch
from torch import nn

from harness.target import chapter_module

perf = chapter_module("ch09", "performance")

MATMUL_LIKE = ("mm", "matmul", "addmm", "bmm", "linear")


class FakeGPU:
    """``step()`` costs the host ``launch_ms`` and queues the next kernel time; at most
    ``queue`` steps may be outstanding. ``clock()`` is in seconds."""

    def __init__(self, kernel_ms, launch_ms=0.5, queue=None):
        self.kernels = deque(kernel_ms) if isinstance(kernel_ms, list) else None
        self.constant = None if isinstance(kernel_ms, list) else float(kernel_ms)
        self.launch_ms, self.queue = launch_ms, queue
        self.now, self.ends, self.launches, self.syncs = 0.0, deque(), 0, 0

    def clock(self):
        return self.now / 1000.0

    def _retire(self):
        while self.ends and self.ends[0] <= self.now:
            self.ends.popleft()

    def step(self):
        self._retire()
        if self.queue and len(self.ends) >= self.queue:
            self.now = self.ends[len(self.ends) - self.queue]
            self._retire()
        self.now += self.launch_ms
        kernel = self.kernels.popleft() if self.kernels is not None else self.constant
        start = max(self.now, self.ends[-1] if self.ends else 0.0)
        self.ends.append(start + kernel)
        self.launches += 1

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        self.syncs += 1
        if self.ends:
            self.now = max(self.now, self.ends[-1])
        self.ends.clear()


# ---------------------------------------------------------------- ch09.1 time_fn


@pytest.mark.task("ch09.1")
@pytest.mark.points(3)
def test_time_fn_reports_median_spread_and_first_call():
    warm = [40.0, 60.0]
    timed = [16, 10, 30, 16, 16, 10, 30, 16, 10, 30, 16]  # 3 x 10, 5 x 16, 3 x 30 ms per call
    gpu = FakeGPU([k - 0.5 for k in warm + timed], launch_ms=0.5)
    t = perf.time_fn(
        gpu.step, warmup=2, iters=11, device="cpu", sync=gpu.synchronize, clock=gpu.clock
    )
    assert gpu.launches == 13, (
        f"time_fn(warmup=2, iters=11) called fn {gpu.launches} times, expected 13 (2 warm-up + 11 timed)"
    )
    assert t.median_ms == pytest.approx(16.0, abs=1e-6), (
        f"per-call times were 3 x 10, 5 x 16 and 3 x 30 ms but median_ms={t.median_ms:.3f}: "
        + (
            "that is only the 0.5 ms launch — synchronize the device before reading the clock"
            if t.median_ms < 1
            else "report the median of the timed calls (one slow call must not move it), not the "
            "mean or the fastest call"
        )
    )
    assert (t.p10_ms, t.p90_ms) == (pytest.approx(10.0, abs=1e-6), pytest.approx(30.0, abs=1e-6)), (
        f"p10/p90 of 3 x 10, 5 x 16, 3 x 30 ms should be 10 and 30, got {t.p10_ms:.3f} and {t.p90_ms:.3f}: "
        "the 40 and 60 ms warm-up calls must not enter the statistics"
    )
    assert t.first_ms == pytest.approx(40.0, abs=1e-6), (
        f"first_ms={t.first_ms:.3f}, but the very first call (a warm-up call) took 40 ms: report it "
        "separately so the cost of a cold start stays visible"
    )


@pytest.mark.task("ch09.1")
@pytest.mark.points(2)
def test_time_fn_waits_for_the_device_not_the_launch():
    gpu = FakeGPU(16.0, launch_ms=4.9)  # the book: launching a step costs the host 4.9 ms
    t = perf.time_fn(gpu.step, 1, 5, "cpu", sync=gpu.synchronize, clock=gpu.clock)
    assert t.median_ms == pytest.approx(20.9, abs=1e-6), (
        f"each call launches for 4.9 ms and then runs 16 ms on the device, so it takes 20.9 ms; "
        f"time_fn said {t.median_ms:.2f} ms. 4.9 ms is what the book's single unsynchronized step "
        "'looked like': synchronize before every clock read"
    )


@pytest.mark.task("ch09.1")
@pytest.mark.cuda
def test_cuda_synchronized_timing_is_stable():
    a = torch.randn(4096, 4096, device="cuda")
    runs = [perf.time_fn(lambda: a @ a, 3, 15, "cuda") for _ in range(2)]
    for t in runs:
        assert t.p90_ms < 1.5 * t.p10_ms, f"synchronized 4096^2 matmul timings spread too much: {t}"
    assert runs[1].median_ms == pytest.approx(runs[0].median_ms, rel=0.2), (
        f"two synchronized timings of the same matmul disagree: {runs}"
    )


# ---------------------------------------------------------------- ch09.2 ms_per_step (repair)


@pytest.mark.task("ch09.2")
@pytest.mark.points(3)
def test_ms_per_step_counts_the_queued_work():
    gpu = FakeGPU(16.0, launch_ms=4.9, queue=9)
    got = perf.ms_per_step(gpu.step, 20, "cpu", sync=gpu.synchronize, clock=gpu.clock)
    assert got == pytest.approx((4.9 + 20 * 16.0) / 20, abs=1e-6), (
        f"20 steps of 16 ms device work (4.9 ms to launch the first) take 16.245 ms/step; ms_per_step "
        f"said {got:.3f}. "
        + (
            "That is what the unsynchronized loop in the book reported (9.5): the host ran ahead of "
            "the queue — synchronize before reading the clock at the end (and before starting it)"
            if got < 16
            else "Synchronizing inside the loop stops the host from queueing ahead: the step time "
            "becomes launch + kernel; sync only before the first and the last clock read"
        )
    )


@pytest.mark.task("ch09.2")
@pytest.mark.cuda
def test_cuda_unsynchronized_loop_under_reports():
    import time

    a = torch.randn(4096, 4096, device="cuda")
    perf.time_fn(lambda: a @ a, 3, 1, "cuda")  # warm up cuBLAS
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        a @ a
    naive = (time.perf_counter() - start) * 1000 / 20
    real = perf.ms_per_step(lambda: a @ a, 20, "cuda")
    assert naive < 0.8 * real, (
        f"the unsynchronized loop reported {naive:.2f} ms/step and ms_per_step {real:.2f}: the "
        "synchronized figure should be clearly larger"
    )


# ---------------------------------------------------------------- ch09.3 profile_top_ops


@pytest.mark.task("ch09.3")
@pytest.mark.points(3)
def test_profile_finds_the_matmul_and_limits_rows():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
    tiny = torch.ones(4)

    def work():
        for _ in range(4):
            a @ b
        for _ in range(40):  # many calls, little time each
            tiny.add(1)

    rows = perf.profile_top_ops(work, 3)
    names = [r.name for r in rows]
    assert len(rows) == 3, (
        f"profile_top_ops(work, n=3) returned {len(rows)} rows {names}: n limits the rows"
    )
    times = [r.self_ms for r in rows]
    assert times == sorted(times, reverse=True), (
        f"rows must be ordered by time, largest first; got times {times} for {names}"
    )
    top = rows[0]
    assert any(k in top.name.lower() for k in MATMUL_LIKE) and top.calls == 4, (
        f"4 matmuls of 256 x 256 dominate this function, yet the top row is {top.name!r} "
        f"({top.calls} calls): rank operators by the time they took, not by how often they ran"
    )
    assert top.name != "aten::matmul", (
        f"the top row is aten::matmul with {top.self_ms:.3f} ms, yet aten::matmul only dispatches to "
        "aten::mm: report and rank *self* CPU time (self_cpu_time_total), which excludes the operators "
        "an operator calls, not the total that includes them"
    )


# ---------------------------------------------------------------- ch09.4 estimate_activation_mb


def mlp(widths):
    layers = []
    for d_in, d_out in zip(widths, widths[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def saved_activation_mb(model, x):
    """MiB of the distinct non-parameter tensors autograd saves during model(x)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(seen.values()) / 2**20


@pytest.mark.task("ch09.4")
@pytest.mark.points(3)
def test_estimate_matches_what_autograd_saves():
    widths, batch = [48, 96, 32, 8], 128
    torch.manual_seed(0)
    measured = saved_activation_mb(mlp(widths), torch.randn(batch, widths[0]))
    got = perf.estimate_activation_mb(batch, widths)
    assert got == pytest.approx(measured, rel=1e-9), (
        f"estimate_activation_mb({batch}, {widths}) = {got:.6f} MiB, but autograd saved {measured:.6f} MiB "
        "(distinct tensors, parameters excluded): each Linear keeps its input (the ReLU's saved output "
        "is that same tensor), the last Linear's output is not saved, and MiB = bytes / 2**20"
    )


# ---------------------------------------------------------------- ch09.5 peak_memory_mb


class FakeMemory:
    """A ledger with torch.cuda's memory-statistics interface, in bytes."""

    MB = 2**20

    def __init__(self, allocated_mb, old_peak_mb):
        self.allocated, self.peak = allocated_mb * self.MB, old_peak_mb * self.MB
        self.syncs = 0

    def alloc(self, mb):
        self.allocated += mb * self.MB
        self.peak = max(self.peak, self.allocated)

    def free(self, mb):
        self.allocated -= mb * self.MB

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        self.syncs += 1

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.allocated

    def memory_allocated(self, device=None):
        return self.allocated

    def max_memory_allocated(self, device=None):
        return self.peak


@pytest.mark.task("ch09.5")
@pytest.mark.points(3)
def test_peak_is_measured_above_the_baseline_from_a_reset():
    mem = FakeMemory(allocated_mb=500, old_peak_mb=2000)  # weights resident; an old, larger peak

    def forward():
        mem.alloc(100)
        mem.alloc(50)
        mem.free(100)
        mem.alloc(30)

    got = perf.peak_memory_mb(forward, "cuda", memory=mem)
    assert got == pytest.approx(150.0), (
        f"forward allocates 100 + 50 MiB, frees 100, allocates 30 on top of 500 MiB of weights; the "
        f"peak above the baseline is 150 MiB, peak_memory_mb said {got:.1f}: "
        + (
            "reset the peak statistics before fn — an older peak is still recorded"
            if got > 1000
            else "subtract what was allocated before fn ran (weights, inputs)"
            if got > 600
            else "read the peak (max_memory_allocated), not what is still allocated at the end"
        )
    )


@pytest.mark.task("ch09.5")
@pytest.mark.cuda
def test_cuda_peak_matches_the_activation_estimate():
    widths, batch = [1024, 4096, 4096, 1024], 4096
    model = mlp(widths).cuda()
    x = torch.randn(batch, widths[0], device="cuda")
    model(x).sum().backward()  # warm up: cuBLAS workspace, grads allocated
    kept = []
    peak = perf.peak_memory_mb(lambda: kept.append(model(x)), "cuda")
    estimate = perf.estimate_activation_mb(batch, widths)
    new_saved = estimate - batch * widths[0] * 4 / 2**20  # the input existed before
    transient = batch * max(widths[1:]) * 4 / 2**20  # one pre-activation alive beside its ReLU
    output = batch * widths[-1] * 4 / 2**20
    assert new_saved <= peak <= new_saved + transient + output + 64, (
        f"forward peak {peak:.1f} MiB vs estimated saved activations {new_saved:.1f} MiB "
        f"(+ at most {transient:.1f} transient, {output:.1f} output)"
    )
