"""Public tests for ch09 — run with `pytest exercises/ch09` (add `--impl solutions` to see
the reference pass).

Timing logic is proven on CPU with a fake asynchronous device: calling it queues work and
costs the host only the launch; the queued work finishes in fake time, and the fake clock
only shows it once someone synchronizes. No real sleeping, so the numbers are exact.
Every function of ch09 takes a callable, so the probes below build the callables (and the
fakes), call the student's code and hand back plain observations; the tests judge them.
Tests marked `cuda` run the same ideas on a real GPU and are skipped elsewhere."""

import time
from collections import deque

import pytest
import torch
from torch import nn

from harness import judge
from harness.probe import because, last_call_ms, probe
from harness.target import chapter_module

perf = chapter_module("ch09", "performance")
PROBES_USE = (  # what the probes use besides themselves (harness/strip.py)
    "CudaSyncAs FakeGPU FakeMemory mlp profiled_work"
)

MATMUL_LIKE = ("mm", "matmul", "addmm", "bmm", "linear")


class FakeGPU:
    """``step()`` costs the host ``launch_ms`` and queues the next kernel time (a constant,
    or the next entry of a list); at most ``queue`` steps may be outstanding (the host then
    waits for a slot). ``earlier`` kernels are already queued when the fake is handed over.
    ``clock()`` is in seconds. ``log`` records "step", "sync" and "clock" in order."""

    def __init__(self, kernel_ms, launch_ms=0.5, queue=None, earlier=()):
        self.kernels = deque(kernel_ms) if isinstance(kernel_ms, list | tuple) else None
        self.constant = None if self.kernels is not None else float(kernel_ms)
        self.launch_ms, self.queue = launch_ms, queue
        self.now, self.ends = 0.0, deque()
        for kernel in earlier:
            self._launch(kernel)
        self.launches, self.syncs, self.log = 0, 0, []

    def clock(self):
        self.log.append("clock")
        return self.now / 1000.0

    def _retire(self):
        while self.ends and self.ends[0] <= self.now:
            self.ends.popleft()

    def _launch(self, kernel):
        self._retire()
        if self.queue and len(self.ends) >= self.queue:
            self.now = self.ends[len(self.ends) - self.queue]
            self._retire()
        self.now += self.launch_ms
        start = max(self.now, self.ends[-1] if self.ends else 0.0)
        self.ends.append(start + kernel)

    def step(self):
        self.log.append("step")
        self._launch(self.kernels.popleft() if self.kernels is not None else self.constant)
        self.launches += 1

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        self.log.append("sync")
        self.syncs += 1
        if self.ends:
            self.now = max(self.now, self.ends[-1])
        self.ends.clear()


class CudaSyncAs:
    """Inside ``with CudaSyncAs(fn):`` torch.cuda.synchronize is ``fn`` (restored after)."""

    def __init__(self, fn):
        self.fn = fn

    def __enter__(self):
        self.saved = torch.cuda.synchronize
        torch.cuda.synchronize = self.fn
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize = self.saved
        return False


@probe
def time_fn_on_fake(
    kernel_ms, launch_ms, warmup, iters, queue=None, earlier=(), device="cpu", default_sync=False
):
    """time_fn(gpu.step, warmup, iters, device, sync=gpu.synchronize, clock=gpu.clock) on a
    FakeGPU (with ``earlier`` work still queued). With ``default_sync`` no sync is passed and
    torch.cuda.synchronize is the fake's for the call. Returns what time_fn returned, how
    many times it called fn, and the fake's event log."""
    gpu = FakeGPU(kernel_ms, launch_ms, queue, earlier)
    if default_sync:
        with CudaSyncAs(gpu.synchronize):
            t = perf.time_fn(gpu.step, warmup, iters, device, clock=gpu.clock)
    else:
        t = perf.time_fn(gpu.step, warmup, iters, device, sync=gpu.synchronize, clock=gpu.clock)
    return {"timing": t, "calls": gpu.launches, "log": gpu.log}


@probe
def ms_per_step_on_fake(
    kernel_ms, launch_ms, queue, steps, earlier=(), device="cpu", default_sync=False
):
    """ms_per_step(gpu.step, steps, device, sync=..., clock=...) on a FakeGPU, like
    time_fn_on_fake: the result, how many steps it ran, and the event log."""
    gpu = FakeGPU(kernel_ms, launch_ms, queue, earlier)
    if default_sync:
        with CudaSyncAs(gpu.synchronize):
            got = perf.ms_per_step(gpu.step, steps, device, clock=gpu.clock)
    else:
        got = perf.ms_per_step(gpu.step, steps, device, sync=gpu.synchronize, clock=gpu.clock)
    return {"ms": got, "calls": gpu.launches, "log": gpu.log}


def percentile_range(values, q):
    """The lowest and highest q-th percentile (q = 10 or 90) of ``values`` over numpy's
    percentile definitions and the statistics module's two methods (whose default,
    'exclusive', extrapolates beyond the data for few values): any standard definition is
    accepted, nothing outside them is."""
    import statistics

    import numpy as np

    methods = (
        "inverted_cdf averaged_inverted_cdf closest_observation interpolated_inverted_cdf "
        "hazen weibull linear median_unbiased normal_unbiased lower higher midpoint nearest"
    ).split()
    found = [float(np.percentile(values, q, method=m)) for m in methods]
    if len(values) > 1:
        for method in ("exclusive", "inclusive"):
            cuts = statistics.quantiles(values, n=10, method=method)
            found.append(cuts[0] if q == 10 else cuts[-1])
    return min(found), max(found)


def median_range(values):
    """The median of ``values``: for an even count, anything between the two middle ones."""
    s = sorted(values)
    n = len(s)
    return (s[n // 2], s[n // 2]) if n % 2 else (s[n // 2 - 1], s[n // 2])


def within(x, lo_hi, tol=1e-6):
    return isinstance(x, float | int) and lo_hi[0] - tol <= x <= lo_hi[1] + tol


def timing_problem(t, per_call, first):
    """Why Timing ``t`` does not describe calls of ``per_call`` ms (first call ``first``),
    or None. Percentiles follow any standard definition; an even-count median may be
    either middle value or between them."""
    checks = (
        ("median_ms", t.median_ms, median_range(per_call)),
        ("p10_ms", t.p10_ms, percentile_range(per_call, 10)),
        ("p90_ms", t.p90_ms, percentile_range(per_call, 90)),
        ("first_ms", t.first_ms, (first, first)),
    )
    for name, got, want in checks:
        if not within(got, want):
            span = f"{want[0]:.4g}" if want[0] == want[1] else f"{want[0]:.4g}..{want[1]:.4g}"
            shown = f"{got:.4g}" if isinstance(got, float | int) else repr(got)
            return f"{name}={shown}, expected {span}"
    return None


# ---------------------------------------------------------------- ch09.1 time_fn


@pytest.mark.task("ch09.1")
@pytest.mark.points(3)
def test_time_fn_reports_median_spread_and_first_call():
    warm = [40.0, 60.0]
    timed = [16, 10, 30, 16, 16, 10, 30, 16, 10, 30, 16]  # 3 x 10, 5 x 16, 3 x 30 ms per call
    with because("time_fn(fn, warmup=2, iters=11, 'cpu', sync=..., clock=...) raised"):
        seen = time_fn_on_fake([k - 0.5 for k in warm + timed], 0.5, 2, 11)
    t = seen["timing"]
    assert seen["calls"] == 13, (
        f"time_fn(warmup=2, iters=11) called fn {seen['calls']} times, expected 13 (2 warm-up + "
        "11 timed)"
    )
    judge.number(
        t.median_ms,
        16.0,
        f"per-call times were 3 x 10, 5 x 16 and 3 x 30 ms but median_ms={t.median_ms:.4g}: "
        + (
            "that is only the 0.5 ms launch — synchronize the device before reading the clock"
            if 0.1 < t.median_ms < 1
            else "report milliseconds: the clock is in seconds"
            if t.median_ms < 0.1
            else "report the median of the timed calls (one slow call must not move it), not the "
            "mean or the fastest call"
        ),
        abs=1e-6,
        rel=1e-6,
    )
    spread = judge.is_number((t.p10_ms, t.p90_ms), (10.0, 30.0), abs=1e-6)
    assert spread, (
        f"p10/p90 of 3 x 10, 5 x 16, 3 x 30 ms should be 10 and 30, got {t.p10_ms:.4g} and "
        f"{t.p90_ms:.4g}: the 40 and 60 ms warm-up calls must not enter the statistics"
    )
    judge.number(
        t.first_ms,
        40.0,
        f"first_ms={t.first_ms:.4g}, but the very first call (a warm-up call) took 40 ms: report "
        "it separately so the cost of a cold start stays visible",
        abs=1e-6,
        rel=1e-6,
    )


@pytest.mark.task("ch09.1")
@pytest.mark.points(2)
def test_time_fn_waits_for_the_device_not_the_launch():
    # the book: launching a step costs the host 4.9 ms, the device then needs 16 ms
    with because("time_fn(fn, 1, 5, 'cpu', sync=..., clock=...) raised"):
        seen = time_fn_on_fake(16.0, 4.9, 1, 5)
    t = seen["timing"]
    judge.number(
        t.median_ms,
        20.9,
        f"each call launches for 4.9 ms and then runs 16 ms on the device, so it takes 20.9 ms; "
        f"time_fn said {t.median_ms:.4g} ms. 4.9 ms is what the book's single unsynchronized "
        "step 'looked like': synchronize before every clock read",
        abs=1e-6,
        rel=1e-6,
    )


@pytest.mark.task("ch09.1")
@pytest.mark.points(2)
def test_time_fn_is_not_charged_for_earlier_work():
    with because("time_fn(fn, 1, 4, 'cpu', sync=..., clock=...) raised"):
        seen = time_fn_on_fake(7.0, 0.5, 1, 4, earlier=[50.0, 50.0, 50.0])
    t = seen["timing"]
    problem = timing_problem(t, [7.5] * 4, 7.5)
    assert problem is None, (
        f"the device still had 150 ms of earlier work queued when time_fn started; each call "
        f"takes 7.5 ms, but {problem}: synchronize before starting the clock too, so nothing "
        "queued earlier lands inside a measurement"
    )


@probe
def cuda_matmul_timings(n, warmup, iters, runs):
    """time_fn of an n x n CUDA matmul, ``runs`` times."""
    a = torch.randn(n, n, device="cuda")
    return [perf.time_fn(lambda: a @ a, warmup, iters, "cuda") for _ in range(runs)]


@pytest.mark.task("ch09.1")
@pytest.mark.cuda
def test_cuda_synchronized_timing_is_stable():
    runs = cuda_matmul_timings(4096, 3, 15, 2)
    for t in runs:
        assert t.p90_ms < 1.5 * t.p10_ms, f"synchronized 4096^2 matmul timings spread too much: {t}"
    judge.number(
        runs[1].median_ms,
        runs[0].median_ms,
        f"two synchronized timings of the same matmul disagree: {runs}",
        abs=1e-12,
        rel=0.2,
    )


# ---------------------------------------------------------------- ch09.2 ms_per_step (repair)


@pytest.mark.task("ch09.2")
@pytest.mark.points(3)
def test_ms_per_step_counts_the_queued_work():
    with because("ms_per_step(step, 20, 'cpu', sync=..., clock=...) raised"):
        seen = ms_per_step_on_fake(16.0, 4.9, 9, 20)
    got = seen["ms"]
    assert seen["calls"] == 20, (
        f"ms_per_step(step, 20) called step {seen['calls']} times: exactly `steps` back-to-back "
        "calls, no extra warm-up call"
    )
    judge.number(
        got,
        (4.9 + 20 * 16.0) / 20,
        f"20 steps of 16 ms device work (4.9 ms to launch the first) take 16.245 ms/step; "
        f"ms_per_step said {got:.4g}. "
        + (
            "Report milliseconds per step: the clock is in seconds"
            if got < 1
            else "That is what the unsynchronized loop in the book reported (9.5): the host ran "
            "ahead of the queue — synchronize before reading the clock at the end (and before "
            "starting it)"
            if got < 16
            else "Synchronizing inside the loop stops the host from queueing ahead: the step time "
            "becomes launch + kernel; sync only before the first and the last clock read"
        ),
        abs=1e-6,
        rel=1e-6,
    )


@pytest.mark.task("ch09.2")
@pytest.mark.points(2)
def test_ms_per_step_is_not_charged_for_earlier_work():
    with because("ms_per_step(step, 10, 'cpu', sync=..., clock=...) raised"):
        seen = ms_per_step_on_fake(16.0, 4.9, 9, 10, earlier=[16.0] * 5)
    got = seen["ms"]
    assert seen["calls"] == 10 and judge.is_number(
        got, (4.9 + 10 * 16.0) / 10, abs=1e-6, rel=1e-6
    ), (
        f"a previous loop left 5 steps (80 ms) on the device; 10 steps of 16 ms device work then "
        f"take 16.49 ms/step, but ms_per_step said {got:.4g} after {seen['calls']} calls: "
        "synchronize before starting the clock (drain what was queued before) and before "
        "stopping it, never inside the loop"
    )


@probe
def book_figures_on_the_simulated_gpu():
    """The reading's four figures on the module's SimulatedGPU (launch 4.9 ms, device 16 ms,
    9 steps of queue): one and twenty steps timed naively by the host (here), then
    ms_per_step of twenty steps and of a single step, each on a fresh device."""
    naive = {}
    for n in (1, 20):
        gpu = perf.SimulatedGPU()
        start = gpu.clock()
        for _ in range(n):
            gpu.step()
        naive[n] = (gpu.clock() - start) * 1000 / n
    synced = {}
    for n in (20, 1):
        gpu = perf.SimulatedGPU()
        synced[n] = perf.ms_per_step(gpu.step, n, sync=gpu.synchronize, clock=gpu.clock)
    return naive, synced


@pytest.mark.task("ch09.2")
@pytest.mark.points(2)
def test_the_books_figures_on_the_simulated_gpu():
    with because("ms_per_step(SimulatedGPU().step, n, sync=..., clock=...) raised"):
        naive, synced = book_figures_on_the_simulated_gpu()
    assert judge.is_number(naive[1], 4.9, abs=1e-12, rel=1e-6) and judge.is_number(
        naive[20], 9.3, abs=0.05, rel=1e-6
    ), (
        f"the module's SimulatedGPU no longer reproduces the reading's naive figures (one step "
        f"{naive[1]:.4g} ms, twenty steps {naive[20]:.4g} ms/step instead of 4.9 and 9.3): keep "
        "the class as it was given"
    )
    ok = judge.is_number(synced[20], 16.245, abs=1e-6, rel=1e-6) and judge.is_number(
        synced[1], 20.9, abs=1e-12, rel=1e-6
    )
    assert ok, (
        f"on the SimulatedGPU ms_per_step should give the book's synchronized 16.2 ms/step for "
        f"20 steps and 20.9 ms (launch + kernel) for one; it gave {synced[20]:.4g} and "
        f"{synced[1]:.4g}: synchronize before starting the clock and before stopping it, not "
        "inside the loop"
    )


@probe
def cuda_naive_and_ms_per_step(n, steps):
    """An unsynchronized host-timed loop of n x n CUDA matmuls (ms per step, measured here)
    and ms_per_step of the same matmul."""
    a = torch.randn(n, n, device="cuda")
    for _ in range(3):  # warm up cuBLAS
        a @ a
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        a @ a
    naive = (time.perf_counter() - start) * 1000 / steps
    real = perf.ms_per_step(lambda: a @ a, steps, "cuda")
    return naive, real


@pytest.mark.task("ch09.2")
@pytest.mark.cuda
def test_cuda_unsynchronized_loop_under_reports():
    naive, real = cuda_naive_and_ms_per_step(4096, 20)
    assert naive < 0.8 * real, (
        f"the unsynchronized loop reported {naive:.2f} ms/step and ms_per_step {real:.2f}: the "
        "synchronized figure should be clearly larger"
    )


# ---------------------------------------------------------------- ch09.3 profile_top_ops


def profiled_work(kind):
    """The function a profile test runs (built beside the student's code)."""
    g = torch.Generator().manual_seed(0)
    if kind == "matmuls-and-adds":
        # The profiler times operators by the wall clock: at 384 x 384 a few preemptions of
        # the 40 tiny adds on a busy machine once outweighed the products (a false fail).
        a, b = torch.randn(768, 768, generator=g), torch.randn(768, 768, generator=g)
        tiny = torch.ones(4)

        def work():
            for _ in range(4):
                a @ b
            for _ in range(40):  # many calls, little time each
                tiny.add(1)

        return work
    if kind == "conv-and-small-mms":
        img, w = torch.randn(4, 32, 128, 128, generator=g), torch.randn(32, 32, 3, 3, generator=g)
        s1, s2 = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g)
        s3 = torch.randn(8, 12, generator=g)

        def work():
            torch.nn.functional.conv2d(img, w, padding=1)
            for _ in range(20):
                s1 @ s2
            for _ in range(10):
                s1 @ s3  # another shape: still aten::mm

        return work
    raise ValueError(kind)


def timed_ms(seen) -> float:
    """The wall time a probe reported for the work it timed, bounded by how long the whole
    call took as the test's own process saw it (the student's process can slow its clock)."""
    return min(seen["wall_ms"], last_call_ms())


@probe
def profile_rows(kind, n):
    """profile_top_ops(work, n) on the named work: the rows, how often work ran, and the
    wall time in ms that work itself took (measured here, inside the profiled run)."""
    inner = profiled_work(kind)
    calls, spans = [], []

    def work():
        calls.append(1)
        start = time.perf_counter()
        inner()
        spans.append((time.perf_counter() - start) * 1000)

    rows = perf.profile_top_ops(work, n)
    return {"rows": rows, "calls": len(calls), "wall_ms": sum(spans)}


@pytest.mark.task("ch09.3")
@pytest.mark.points(3)
def test_profile_finds_the_matmul_and_limits_rows():
    with because("profile_top_ops(work, 3) raised"):
        seen = profile_rows("matmuls-and-adds", 3)
    wall_ms = timed_ms(seen)
    rows = seen["rows"]
    assert seen["calls"] == 1, f"profile_top_ops must run fn once, it ran it {seen['calls']} times"
    names = [r.name for r in rows]
    assert len(rows) == 3, (
        f"profile_top_ops(work, n=3) returned {len(rows)} rows {names}: n limits the rows"
    )
    times = [r.self_ms for r in rows]
    assert times == sorted(times, reverse=True), (
        f"rows must be ordered by time, largest first; got times {times} for {names}"
    )
    top = rows[0]
    ok = any(k in top.name.lower() for k in MATMUL_LIKE) and top.calls == 4
    assert ok, (
        f"4 matmuls of 768 x 768 dominate this function, yet the top row is {top.name!r} "
        f"({top.calls} calls): rank operators by the time spent in them (self CPU time), not by "
        "how often they ran"
    )
    assert top.name != "aten::matmul", (
        f"the top row is aten::matmul with {top.self_ms:.3f} ms, yet aten::matmul only dispatches "
        "to aten::mm: report and rank *self* CPU time (self_cpu_time_total), which excludes the "
        "operators an operator calls, not the total that includes them"
    )
    # 4 products of 768 x 768 matrices (3.6 GFLOP) cannot take less than 5 microseconds, and
    # the operators' own times cannot add up to more than the function they ran in took
    total = sum(times)
    ok = 0.005 <= top.self_ms and total <= wall_ms * 1.01 + 0.05
    assert ok, (
        f"the rows' self times add up to {total:.4g} (top {top.self_ms:.4g}) while the profiled "
        f"function itself took {wall_ms:.4g} ms: self_ms is in milliseconds, and the "
        "profiler reports microseconds (divide by 1000)"
    )


# ---------------------------------------------------------------- ch09.4 estimate_activation_mb


def mlp(widths, dtype=torch.float32):
    layers = []
    for d_in, d_out in zip(widths, widths[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def saved_activation_mb(widths, batch, dtype=torch.float32):
    """MiB of the distinct non-parameter tensors autograd saves during an MLP's forward."""
    torch.manual_seed(0)
    model = mlp(widths, dtype)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in params:
            seen[ptr] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.randn(batch, widths[0], dtype=dtype))
    return sum(seen.values()) / 2**20


@pytest.mark.task("ch09.4")
@pytest.mark.points(3)
def test_estimate_matches_what_autograd_saves():
    widths, batch = [48, 96, 32, 8], 128
    measured = saved_activation_mb(widths, batch)
    got = perf.estimate_activation_mb(batch, widths)
    assert isinstance(got, float) and judge.is_number(got, measured, abs=1e-12, rel=1e-9), (
        f"estimate_activation_mb({batch}, {widths}) = {got!r} MiB, but autograd saved "
        f"{measured:.6f} MiB (distinct tensors, parameters excluded): each Linear keeps its input "
        "(the ReLU's saved output is that same tensor), the last Linear's output is not saved, "
        "and MiB = bytes / 2**20"
    )


# ---------------------------------------------------------------- ch09.5 peak_memory_mb


class FakeMemory:
    """A ledger with torch.cuda's memory-statistics interface, in bytes; ``log`` records
    every call and "fn start" / "fn end" around the measured function."""

    MB = 2**20

    def __init__(self, allocated_mb, old_peak_mb):
        self.allocated, self.peak = allocated_mb * self.MB, old_peak_mb * self.MB
        self.syncs = 0
        self.log = []

    def alloc(self, mb):
        self.allocated += mb * self.MB
        self.peak = max(self.peak, self.allocated)

    def free(self, mb):
        self.allocated -= mb * self.MB

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        self.log.append("synchronize")
        self.syncs += 1

    def reset_peak_memory_stats(self, device=None):
        self.log.append("reset_peak_memory_stats")
        self.peak = self.allocated

    def memory_allocated(self, device=None):
        self.log.append("memory_allocated")
        return self.allocated

    def max_memory_allocated(self, device=None):
        self.log.append("max_memory_allocated")
        return self.peak


@probe
def peak_on_fake(allocated_mb, old_peak_mb, script, device="cuda"):
    """peak_memory_mb(fn, device, memory=ledger) where fn replays ``script`` (MiB: positive
    allocates, negative frees) on a FakeMemory; the result, how often fn ran, and the log."""
    mem = FakeMemory(allocated_mb, old_peak_mb)
    calls = []

    def fn():
        calls.append(1)
        mem.log.append("fn start")
        for mb in script:
            if mb > 0:
                mem.alloc(mb)
            else:
                mem.free(-mb)
        mem.log.append("fn end")

    got = perf.peak_memory_mb(fn, device, memory=mem)
    return {"mb": got, "calls": len(calls), "log": mem.log}


@pytest.mark.task("ch09.5")
@pytest.mark.points(3)
def test_peak_is_measured_above_the_baseline_from_a_reset():
    # weights resident (500 MiB) and an old, larger peak (2000 MiB); fn allocates 100 and
    # 50 MiB, frees the 100, allocates 30
    with because("peak_memory_mb(fn, 'cuda', memory=ledger) raised"):
        seen = peak_on_fake(500, 2000, [100, 50, -100, 30])
    got = seen["mb"]
    assert seen["calls"] == 1, f"peak_memory_mb must run fn once, it ran it {seen['calls']} times"
    judge.number(
        got,
        150.0,
        f"fn allocates 100 + 50 MiB, frees 100, allocates 30 on top of 500 MiB of weights; the "
        f"peak above the baseline is 150 MiB, peak_memory_mb said {got!r}: "
        + (
            "reset the peak statistics before fn — an older peak is still recorded"
            if isinstance(got, float | int) and got > 1000
            else "subtract what was allocated before fn ran (weights, inputs)"
            if isinstance(got, float | int) and got > 600
            else "read the peak (max_memory_allocated), not what is still allocated at the end"
            if isinstance(got, float | int) and 70 < got < 90
            else "report MiB (bytes / 2**20) of the peak above what was allocated before fn"
        ),
        abs=1e-12,
        rel=1e-6,
    )


@probe
def cuda_forward_peak(widths, batch):
    """peak_memory_mb of one forward of an MLP on CUDA (its output kept alive)."""
    model = mlp(widths).cuda()
    x = torch.randn(batch, widths[0], device="cuda")
    model(x).sum().backward()  # warm up: cuBLAS workspace, grads allocated
    kept = []
    return perf.peak_memory_mb(lambda: kept.append(model(x)), "cuda")


@pytest.mark.task("ch09.5")
@pytest.mark.cuda
def test_cuda_peak_matches_the_activation_estimate():
    widths, batch = [1024, 4096, 4096, 1024], 4096
    peak = cuda_forward_peak(widths, batch)
    estimate = batch * sum(widths[:-1]) * 4 / 2**20  # every Linear's input, float32
    new_saved = estimate - batch * widths[0] * 4 / 2**20  # the input existed before
    transient = batch * max(widths[1:]) * 4 / 2**20  # one pre-activation alive beside its ReLU
    output = batch * widths[-1] * 4 / 2**20
    assert new_saved <= peak <= new_saved + transient + output + 64, (
        f"forward peak {peak:.1f} MiB vs estimated saved activations {new_saved:.1f} MiB "
        f"(+ at most {transient:.1f} transient, {output:.1f} output)"
    )
