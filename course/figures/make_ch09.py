"""Simulated, not measured: ms per step that a naive (unsynchronized) loop reports versus
the synchronized figure, for loops of 1..40 steps, on the reference solution's
SimulatedGPU (host launch 4.9 ms, device 16 ms per step, 9 steps of queue).

python course/figures/make_ch09.py   ->  course/figures/ch09_naive_vs_synced.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

perf = load_solution("ch09", "performance")

lengths = list(range(1, 41))
naive, synced = [], []
for n in lengths:
    gpu = perf.SimulatedGPU()
    start = gpu.clock()
    for _ in range(n):
        gpu.step()
    naive.append((gpu.clock() - start) * 1000 / n)  # the host's view: no synchronize
    gpu = perf.SimulatedGPU()
    synced.append(perf.ms_per_step(gpu.step, n, sync=gpu.synchronize, clock=gpu.clock))

fig, ax = plt.subplots(figsize=(6.5, 3.8))
ax.plot(lengths, naive, marker=".", label="naive loop (clock read without synchronize)")
ax.plot(lengths, synced, marker=".", label="ms_per_step (synchronize, then read the clock)")
ax.axhline(16.0, color="grey", ls=":", lw=1)
for n, y, text in (
    (1, naive[0], "one step alone: 4.9"),
    (20, naive[19], f"20 steps: {naive[19]:.1f}"),
):
    ax.annotate(text, (n, y), textcoords="offset points", xytext=(8, -14), fontsize=8)
ax.annotate(
    f"20 steps: {synced[19]:.1f}",
    (20, synced[19]),
    textcoords="offset points",
    xytext=(8, 6),
    fontsize=8,
)
ax.annotate(
    "first step: 20.9", (1, synced[0]), textcoords="offset points", xytext=(8, 0), fontsize=8
)
ax.set_xlabel("steps in the timed loop")
ax.set_ylabel("reported ms per step")
ax.set_ylim(0, 23)
ax.set_title("SIMULATION: launch 4.9 ms, device 16 ms/step, queue of 9 steps")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig(HERE / "ch09_naive_vs_synced.png", dpi=100)
print(HERE / "ch09_naive_vs_synced.png")
