"""Draw how many compilations each of the book's 13 requests triggers under each
`dynamic` setting, using the reference solution's CausalTagger and the eager backend.

python course/figures/make_ch09a.py   ->  course/figures/ch09a_compiles_per_request.png
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402

HERE = Path(__file__).resolve().parent
from solution import load_solution  # noqa: E402

comp = load_solution("ch09a", "compilation")

LENGTHS = [5, 8, 8, 11, 14, 17, 5, 20, 23, 26, 29, 32, 35]
torch.manual_seed(0)
model = comp.CausalTagger().eval()
g = torch.Generator().manual_seed(0)
requests = [torch.randint(0, 32, (1, t), generator=g) for t in LENGTHS]

fig, ax = plt.subplots(figsize=(7, 3.6))
width = 0.27
for k, dynamic in enumerate((False, None, True)):
    torch.compiler.reset()
    counting = CompileCounterWithBackend("eager")
    compiled = torch.compile(model, backend=counting, dynamic=dynamic)
    per_request = []
    with torch.no_grad():
        for idx in requests:
            before = counting.frame_count
            compiled(idx)
            per_request.append(counting.frame_count - before)
    xs = [i + (k - 1) * width for i in range(len(LENGTHS))]
    ax.bar(
        xs,
        per_request,
        width,
        label=f"dynamic={dynamic}: {sum(per_request)} compile{'s' if sum(per_request) != 1 else ''}",
    )
ax.axvline(9.5, color="grey", ls=":", lw=1)
ax.text(9.6, 0.55, "recompile_limit (8) reached:\nnew lengths run eagerly", fontsize=7)
ax.set_xticks(range(len(LENGTHS)), [f"T={t}" for t in LENGTHS], fontsize=7)
ax.set_yticks([0, 1])
ax.set_ylabel("new compilations")
ax.set_title("13 requests, one model: what each call compiles (eager backend)")
ax.set_ylim(0, 1.5)
ax.legend(fontsize=8, loc="upper center", ncol=3)
fig.tight_layout()
fig.savefig(HERE / "ch09a_compiles_per_request.png", dpi=100)
print(HERE / "ch09a_compiles_per_request.png")
