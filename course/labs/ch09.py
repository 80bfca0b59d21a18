# %% [markdown]
# # Lab ch09 — what does the stopwatch measure?
#
# The reading (`course/ch09.md`) opens with a timing loop that prints a plausible
# ms/step and measures the wrong thing. This machine has no GPU, so the lab runs that loop
# on the module's `SimulatedGPU` (host launch 4.9 ms, device work 16 ms, a queue of 9
# steps), a toy asynchronous device whose clock only shows the device's work after a
# synchronize. Then it points the tools *you* write in `exercises/ch09/performance.py`
# at it, and at real CPU work. Cells that call your code say `TODO` until you have
# written that part; nothing here stops.

# %%
import pathlib
import statistics
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from harness import lab  # noqa: E402

perf = lab.module("ch09")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# The book's loop: read the clock, call the step 20 times, read the clock. On a real GPU
# `train_step()` queues its kernels and returns; here `gpu.step()` does the same.


# %%
def naive_ms_per_step(n):
    gpu = perf.SimulatedGPU()
    start = gpu.clock()
    for _ in range(n):
        gpu.step()
    return (gpu.clock() - start) * 1000 / n  # the host's clock, nothing waited for


# %% [markdown]
# **Predict before you run the next cell.** The device needs 16 ms a step. What does the
# naive loop report for one step, and for 20?

# %%
my_guess = {"naive, 1 step": None, "naive, 20 steps": None, "naive, 40 steps": None}

# %%
for n in (1, 5, 20, 40):
    print(f"naive loop of {n:>2} steps: {naive_ms_per_step(n):.1f} ms/step")
lab.check("naive, one step", f"{naive_ms_per_step(1):.1f}")
lab.check("naive, 20 steps", f"{naive_ms_per_step(20):.1f}")

# %% [markdown]
# One step alone shows only the launch. A longer loop fills the queue of 9, after which
# the host waits for a free slot, so the figure creeps towards 16 — but the clock stops
# with a queue's worth of work still pending.
#
# ## The repair (task ch09.2)
#
# Your `ms_per_step` still reads the clock like the book's loop. Synchronize before
# starting the clock and before stopping it.
#
# **Predict before you run the next cell.** With the repair, what is 20 steps' figure,
# and what is one step's?

# %%
my_guess = {"ms_per_step, 20 steps": None, "ms_per_step, 1 step": None}


# %%
def repaired_ms_per_step(n):
    gpu = perf.SimulatedGPU()
    return lab.attempt(perf.ms_per_step, gpu.step, n, sync=gpu.synchronize, clock=gpu.clock)


lengths = list(range(1, 41))
synced = [repaired_ms_per_step(n) for n in lengths]
if abs(synced[19] - naive_ms_per_step(20)) < 1e-9:
    print("your ms_per_step still reports the naive figure: the clock stops before the device")
    synced = None
else:
    print(
        f"ms_per_step: 20 steps {synced[19]:.1f}, one step {synced[0]:.1f}, 40 steps {synced[39]:.1f}"
    )
    lab.check("ms_per_step, 20 steps", f"{synced[19]:.1f}")
    lab.check("ms_per_step, one step", f"{synced[0]:.1f}")

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(lengths, [naive_ms_per_step(n) for n in lengths], ".-", label="naive loop")
if synced is not None:
    ax.plot(lengths, synced, ".-", label="your ms_per_step")
ax.axhline(16.0, color="grey", ls=":", lw=1)
ax.set_xlabel("steps in the timed loop")
ax.set_ylabel("ms per step (simulated)")
ax.set_ylim(0, 23)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Why not synchronize after every step, to be safe? Because then the host cannot queue
# ahead, and each step costs launch *plus* kernel:

# %%
gpu = perf.SimulatedGPU()
start = gpu.clock()
for _ in range(20):
    gpu.step()
    gpu.synchronize()
print(f"synchronized inside the loop: {(gpu.clock() - start) * 1000 / 20:.1f} ms/step")
lab.check("synchronized after every step", f"{(gpu.clock() - start) * 1000 / 20:.1f}")

# %% [markdown]
# ## Timing one call (task ch09.1)
#
# `time_fn` synchronizes before every clock read, keeps the warm-up out of the statistics
# but reports the first call, and gives the median with the 10th and 90th percentiles.
# First on the simulated device, one step a call:

# %%
gpu = perf.SimulatedGPU()
t = lab.attempt(perf.time_fn, gpu.step, 0, 20, "cpu", sync=gpu.synchronize, clock=gpu.clock)
if t is not None:
    print(f"simulated step: median {t.median_ms:.1f} ms, first {t.first_ms:.1f} ms")

# %% [markdown]
# **Predict before you run the next cell.** A fake call that takes 1 ms, except every
# tenth call, which takes 50 ms (a garbage-collection pause). Over 20 timed calls, what
# are the mean and the median?

# %%
my_guess = {"mean": None, "median": None}


# %%
class FakeClock:
    """A clock that the fake call advances: 1 ms a call, 50 ms on every tenth."""

    def __init__(self):
        self.ms, self.calls = 0.0, 0

    def __call__(self):
        return self.ms / 1000

    def call(self):
        self.calls += 1
        self.ms += 50.0 if self.calls % 10 == 0 else 1.0


fake = FakeClock()
t = lab.attempt(perf.time_fn, fake.call, 0, 20, "cpu", clock=fake)
if t is not None:
    per_call = [50.0 if k % 10 == 0 else 1.0 for k in range(1, 21)]
    print(f"mean {statistics.mean(per_call):.2f} ms; your median {t.median_ms:.2f} ms")
    print(f"p10 {t.p10_ms:.2f} ms, p90 {t.p90_ms:.2f} ms")

# %% [markdown]
# And real CPU work: a 256 × 256 matrix product with no warm-up, so that `first_ms` is
# the cold call. (Wall-clock times: your numbers will differ from anyone else's.)

# %%
torch.manual_seed(0)
a, b = torch.randn(256, 256), torch.randn(256, 256)
t = lab.attempt(perf.time_fn, lambda: a @ b, 0, 20, "cpu")
if t is not None:
    print(f"first {t.first_ms:.3f} ms, median {t.median_ms:.3f} ms")
    print(f"p10 {t.p10_ms:.3f} ms, p90 {t.p90_ms:.3f} ms")
try:
    perf.time_fn(lambda: a @ b, 0, 0, "cpu")
except NotImplementedError:
    pass
except ValueError as exc:
    print("iters=0 raises ValueError:", exc)

# %% [markdown]
# ## Where the time goes (task ch09.3)
#
# **Predict before you run the next cell.** A small MLP's forward and backward. Which
# operator has the most self time? Is it the one called most often?

# %%
my_guess = {"top operator": None, "most called": None}

# %%
torch.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
)
x = torch.randn(128, 256)


def forward_backward():
    mlp.zero_grad()
    mlp(x).sum().backward()


forward_backward()  # warm up before profiling
rows = lab.attempt(perf.profile_top_ops, forward_backward, 6)
for r in rows or []:
    print(f"{r.name:<36} {r.self_ms:8.3f} ms  {r.calls:>3} calls")

# %% [markdown]
# `nn.Linear` with a bias runs `aten::addmm` forward; the backward's products are
# `aten::mm`. A plain 2-D `@` lands on `aten::mm` too, under `aten::matmul`:

# %%
rows = lab.attempt(perf.profile_top_ops, lambda: a @ b, 3)
if rows:
    print("a @ b:", [r.name for r in rows])


def forty_adds_and_one_product():
    y = torch.zeros(4)
    for _ in range(40):
        y = y + 1
    return a @ b


rows = lab.attempt(perf.profile_top_ops, forty_adds_and_one_product, 3)
for r in rows or []:
    print(f"{r.name:<36} {r.self_ms:8.3f} ms  {r.calls:>3} calls")

# %% [markdown]
# ## Memory (task ch09.4)
#
# Each `Linear` saves its input; each `ReLU` saves its output, which is the next
# `Linear`'s input. Measure what autograd really saves, parameters excluded, with
# `saved_tensors_hooks`, and compare with your estimate.
#
# **Predict before you run the next cell.** Batch 128, widths (256, 512, 512, 10): how
# many MiB in float32, and in bfloat16?

# %%
my_guess = {"float32 MiB": None, "bfloat16 MiB": None}


# %%
def saved_mib(model, inputs):
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages = {}

    def pack(t):
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(inputs)
    return sum(storages.values()) / 2**20


for dtype in (torch.float32, torch.bfloat16):
    measured = saved_mib(mlp.to(dtype), x.to(dtype))
    estimate = lab.attempt(perf.estimate_activation_mb, 128, (256, 512, 512, 10), dtype)
    if estimate is None:
        break
    print(f"{str(dtype):<15} saved {measured:.4f} MiB, your estimate {estimate:.4f} MiB")
mlp.float()

# %% [markdown]
# ## Peak memory (task ch09.5)
#
# On a GPU, `peak_memory_mb` reads `torch.cuda`'s allocator statistics. Here a fake
# ledger with the same four functions stands in: 100 MiB of weights are already there, an
# earlier step peaked at 900 MiB, and the step we measure holds 40 MiB at its highest.


# %%
class Ledger:
    def __init__(self):
        self.now, self.peak = 100 * 2**20, 900 * 2**20

    def synchronize(self, device=None):
        pass

    def reset_peak_memory_stats(self, device=None):
        self.peak = self.now

    def memory_allocated(self, device=None):
        return self.now

    def max_memory_allocated(self, device=None):
        return self.peak

    def step(self):
        self.now += 40 * 2**20
        self.peak = max(self.peak, self.now)
        self.now -= 40 * 2**20


ledger = Ledger()
mib = lab.attempt(perf.peak_memory_mb, ledger.step, "cpu", memory=ledger)
if mib is not None:
    print(f"your peak: {mib:.1f} MiB (no reset would say 800, no baseline 140)")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch09` runs them (the `cuda` ones are
# skipped on this machine):

# %%
lab.run_tests("ch09")
