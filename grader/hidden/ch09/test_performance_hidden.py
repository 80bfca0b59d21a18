"""Hidden tests for ch09: other devices, queues, functions and sizes than the public ones,
so a solution that only fits the public cases fails. Messages state the property."""

from collections import deque

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from harness.target import chapter_module

perf = chapter_module("ch09", "performance")


class FakeGPU:
    """Asynchronous fake device: step() costs launch_ms on the host and queues kernel_ms."""

    def __init__(self, kernel_ms, launch_ms=0.5, queue=None):
        self.kernel_ms, self.launch_ms, self.queue = kernel_ms, launch_ms, queue
        self.now, self.ends, self.launches = 0.0, deque(), 0

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
        start = max(self.now, self.ends[-1] if self.ends else 0.0)
        self.ends.append(start + self.kernel_ms)
        self.launches += 1

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        if self.ends:
            self.now = max(self.now, self.ends[-1])
        self.ends.clear()


# ---------------------------------------------------------------- ch09.1 time_fn


@pytest.mark.task("ch09.1")
def test_time_fn_is_not_charged_for_work_queued_before_it():
    gpu = FakeGPU(50.0, launch_ms=0.5)
    for _ in range(3):
        gpu.step()  # 150 ms of earlier work still on the device
    gpu.kernel_ms = 7.0
    t = perf.time_fn(gpu.step, 0, 4, "cpu", sync=gpu.synchronize, clock=gpu.clock)
    assert gpu.launches == 3 + 4, "with warmup=0, time_fn must call fn exactly iters times"
    assert t.first_ms == pytest.approx(7.5, abs=1e-6) and t.median_ms == pytest.approx(
        7.5, abs=1e-6
    ), (
        "each call takes 7.5 ms, but work queued before time_fn started leaked into the measurements "
        f"(first_ms={t.first_ms:.2f}, median_ms={t.median_ms:.2f}): synchronize before starting the clock too"
    )


@pytest.mark.task("ch09.1")
def test_time_fn_defaults_work_on_the_cpu():
    calls = []
    a = torch.randn(64, 64)

    def work():
        calls.append(1)
        return a @ a

    t = perf.time_fn(work, 2, 7, "cpu")
    assert len(calls) == 9, f"warmup=2, iters=7 must call fn 9 times, got {len(calls)}"
    assert 0 < t.p10_ms <= t.median_ms <= t.p90_ms and t.first_ms > 0, (
        "on the CPU (nothing to synchronize, time.perf_counter as the clock) the timing must be positive "
        f"milliseconds with p10 <= median <= p90; got {t}"
    )


@pytest.mark.task("ch09.1")
@pytest.mark.cuda
def test_cuda_pinned_non_blocking_copy_returns_before_the_transfer_ends():
    import time

    pinned = torch.empty(256 * 2**20 // 4).pin_memory()
    copy_ms = perf.time_fn(lambda: pinned.to("cuda", non_blocking=True), 2, 5, "cuda").median_ms
    torch.cuda.synchronize()
    start = time.perf_counter()
    pinned.to("cuda", non_blocking=True)
    issued_ms = (time.perf_counter() - start) * 1000
    torch.cuda.synchronize()
    assert issued_ms < 0.5 * copy_ms, (
        f"a non_blocking copy from pinned memory should return to the host ({issued_ms:.2f} ms) well "
        f"before the 256 MiB transfer completes ({copy_ms:.2f} ms), so the host can overlap other work"
    )


# ---------------------------------------------------------------- ch09.2 ms_per_step (repair)


@pytest.mark.task("ch09.2")
@pytest.mark.points(2)
def test_ms_per_step_drains_earlier_work_first():
    gpu = FakeGPU(16.0, launch_ms=4.9, queue=9)
    for _ in range(5):
        gpu.step()  # a previous loop left 5 steps on the device
    got = perf.ms_per_step(gpu.step, 10, "cpu", sync=gpu.synchronize, clock=gpu.clock)
    assert gpu.launches == 15 and got == pytest.approx((4.9 + 10 * 16.0) / 10, abs=1e-6), (
        f"10 steps of 16 ms device work take 16.49 ms/step once earlier queued work is drained; got "
        f"{got:.3f} after {gpu.launches - 5} calls: synchronize before starting the clock and before "
        "stopping it, never inside the loop"
    )


# ---------------------------------------------------------------- ch09.3 profile_top_ops


@pytest.mark.task("ch09.3")
@pytest.mark.points(2)
def test_profile_ranks_by_time_and_honours_n():
    g = torch.Generator().manual_seed(1)
    img, w = torch.randn(2, 16, 64, 64, generator=g), torch.randn(16, 16, 3, 3, generator=g)
    s1, s2 = torch.randn(8, 8, generator=g), torch.randn(8, 8, generator=g)

    def work():
        F.conv2d(img, w, padding=1)
        for _ in range(30):
            s1 @ s2

    one = perf.profile_top_ops(work, 1)
    assert len(one) == 1 and "conv" in one[0].name.lower(), (
        "with n=1 the single row must be the operator that took the most time (here a convolution "
        f"called once, not a tiny matmul called 30 times); got {[(r.name, r.calls) for r in one]}"
    )
    many = perf.profile_top_ops(work, 50)
    mm = [r for r in many if r.name == "aten::mm"]
    assert mm and mm[0].calls == 30 and len(many) < 50, (
        "rows must aggregate calls per operator (aten::mm ran 30 times) and n only caps the number of rows; "
        f"got {[(r.name, r.calls) for r in many][:8]}"
    )
    conv = {r.name: r.self_ms for r in many if "conv" in r.name.lower()}
    assert "aten::conv2d" in conv and conv["aten::conv2d"] < max(conv.values()), (
        "self time excludes the operators an operator calls: aten::conv2d only dispatches to the "
        "convolution kernel, so its self time must be smaller than the kernel's; got "
        f"{sorted(conv.items(), key=lambda kv: -kv[1])}"
    )


# ---------------------------------------------------------------- ch09.4 estimate_activation_mb


def saved_mb(widths, batch, dtype):
    layers = []
    for d_in, d_out in zip(widths, widths[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1]).to(dtype)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.randn(batch, widths[0], dtype=dtype))
    return sum(seen.values()) / 2**20


@pytest.mark.task("ch09.4")
@pytest.mark.parametrize(
    "widths, batch, dtype",
    [([20, 20], 50, torch.float32), ([7, 33, 5, 5, 2], 96, torch.bfloat16)],
    ids=["one-linear", "deep-bf16"],
)
def test_estimate_other_shapes_and_dtypes(widths, batch, dtype):
    got = perf.estimate_activation_mb(batch, widths, dtype)
    want = saved_mb(widths, batch, dtype)
    assert got == pytest.approx(want, rel=1e-9), (
        f"the estimate must equal the bytes autograd saves (every Linear's input, at the dtype's element "
        f"size, in MiB); got {got:.6f}, measured {want:.6f}"
    )


# ---------------------------------------------------------------- ch09.5 peak_memory_mb


class FakeMemory:
    MB = 2**20

    def __init__(self, allocated_mb, old_peak_mb):
        self.allocated, self.peak = allocated_mb * self.MB, old_peak_mb * self.MB

    def alloc(self, mb):
        self.allocated += mb * self.MB
        self.peak = max(self.peak, self.allocated)

    def free(self, mb):
        self.allocated -= mb * self.MB

    def synchronize(self, device=None):  # accepts torch.cuda's optional device
        pass

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.allocated

    def memory_allocated(self, device=None):
        return self.allocated

    def max_memory_allocated(self, device=None):
        return self.peak


@pytest.mark.task("ch09.5")
@pytest.mark.points(2)
def test_peak_of_a_function_that_frees_everything():
    mem = FakeMemory(allocated_mb=1000, old_peak_mb=3000)

    def scratch():
        mem.alloc(64)
        mem.alloc(64)
        mem.free(64)
        mem.free(64)

    got = perf.peak_memory_mb(scratch, "cuda", memory=mem)
    assert got == pytest.approx(128.0), (
        "a function that briefly holds 128 MiB and frees it all has a peak of 128 MiB above its "
        f"baseline, whatever was resident or peaked before it; got {got:.1f}"
    )
