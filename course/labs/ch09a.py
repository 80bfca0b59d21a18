# %% [markdown]
# # Lab ch09a — counting what the compiler does behind your back
#
# The reading (`course/ch09a.md`) opens with a server whose compiled model returns the
# right numbers while it recompiles for every new request length, and then silently runs
# eagerly. This lab runs that program, counts its compilations, and then points the tools
# *you* write in `exercises/ch09a/compilation.py` at it. Every compile uses
# `backend="eager"`: Dynamo does all the work this chapter counts (frames, graphs, breaks,
# guards) and then runs the captured graph as it is, so nothing waits for a code generator.
# Cells that call your code say `TODO` until you have written that part.

# %%
import logging
import pathlib
import sys

root = next(
    p for p in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents] if (p / "harness").is_dir()
)
sys.path.insert(0, str(root))

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from torch import nn  # noqa: E402
from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402
from torch._dynamo.utils import counters, guard_failures  # noqa: E402

from harness import lab  # noqa: E402

comp = lab.module("ch09a")  # your module (set COURSE_IMPL=solutions to see the reference)

# %% [markdown]
# ## The broken program
#
# A small causal tagger, compiled with `dynamic=False`, serves 13 requests of 11
# distinct lengths. A counting backend forwards to `"eager"` and counts the graphs it is
# handed; a logging handler keeps Dynamo's warnings.

# %%
LENGTHS = [5, 8, 8, 11, 14, 17, 5, 20, 23, 26, 29, 32, 35]
torch.manual_seed(0)
model = comp.CausalTagger().eval()
g = torch.Generator().manual_seed(0)
requests = [torch.randint(0, 32, (1, t), generator=g) for t in LENGTHS]


class Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage().splitlines()[0])


warnings_kept = Kept()
logging.getLogger("torch._dynamo").addHandler(warnings_kept)


def per_request_compiles(dynamic):
    """Compile the tagger afresh; how many graphs each request added, and whether every
    output equals the eager model's."""
    torch.compiler.reset()
    counting = CompileCounterWithBackend("eager")
    compiled = torch.compile(model, backend=counting, dynamic=dynamic)
    added, same = [], True
    with torch.no_grad():
        for idx in requests:
            before = counting.frame_count
            out = compiled(idx)
            added.append(counting.frame_count - before)
            same = same and torch.allclose(out, model(idx), atol=1e-5)
    return added, same


# %% [markdown]
# **Predict before you run the next cell.** How many times does Dynamo compile the model
# for these 13 requests with `dynamic=False`? What happens at the ninth distinct length?
# And with `dynamic=None` (the default), and `dynamic=True`?

# %%
my_guess = {"dynamic=False": None, "dynamic=None": None, "dynamic=True": None}

# %%
frames_before = dict(counters["frames"])
runs = {}
for dynamic in (False, None, True):
    runs[dynamic], same = per_request_compiles(dynamic)
    print(f"dynamic={dynamic!s:<5}: {sum(runs[dynamic])} compilations {runs[dynamic]}")
    print(f"{'':<15}every output equals eager: {same}")
    lab.check(f"compilations with dynamic={dynamic}", f"{sum(runs[dynamic])}")
    if dynamic is False:
        ok = counters["frames"]["ok"] - frames_before.get("ok", 0)
        total = counters["frames"]["total"] - frames_before.get("total", 0)
        print(f"{'':<15}frames ok {ok}, attempts {total}")
limit = [line for line in warnings_kept.lines if "recompile_limit" in line]
print("the only trace:", limit)
if limit:
    lab.check("the warning", limit[0])

# %%
fig, ax = plt.subplots(figsize=(6, 2.8))
for k, (dynamic, added) in enumerate(runs.items()):
    ax.bar([i + (k - 1) * 0.27 for i in range(len(LENGTHS))], added, 0.27, label=f"{dynamic}")
ax.set_xticks(range(len(LENGTHS)), [str(t) for t in LENGTHS], fontsize=7)
ax.set_xlabel("request length T")
ax.set_ylabel("new compilations")
ax.legend(title="dynamic=", fontsize=7, ncol=3)
fig.tight_layout()
plt.show()

# %% [markdown]
# With `dynamic=False` the last four lengths compiled nothing: past `recompile_limit` the
# "compiled" model is the eager one, plus eight sets of guards checked on every call.
#
# ## The repair (task ch09a.2)
#
# Your `serve` still compiles with `dynamic=False`. Make it compile at most twice, through
# the backend it is given, whatever lengths arrive.

# %%
torch.compiler.reset()
counting = CompileCounterWithBackend("eager")
outs = lab.attempt(comp.serve, model, requests, backend=counting)
if outs is not None:
    with torch.no_grad():
        same = all(torch.allclose(o, model(r), atol=1e-5) for o, r in zip(outs, requests))
    print(f"your serve: {counting.frame_count} compilations, outputs equal eager: {same}")

# %% [markdown]
# ## Counting compilations (task ch09a.1)
#
# **Predict before you run the next cell.** `compile_stats` returns `(frames, graphs,
# graph_breaks, recompiles, reasons)`. What are the first four for each setting, and how
# many guard-failure texts does `dynamic=False` record?

# %%
my_guess = {"dynamic=False": None, "dynamic=None": None, "dynamic=True": None}

# %%
for dynamic in (False, None, True):
    stats = lab.attempt(comp.compile_stats, model, requests, dynamic=dynamic)
    if stats is None:
        break
    short = ", ".join(str(v) for v in stats[:4])
    tail = "[]" if not stats.reasons else "..."
    print(f"dynamic={dynamic!s:<5}: ({short}, {tail})  {len(stats.reasons)} reasons")
    lab.check(f"compile_stats, dynamic={dynamic}", f"({short}, {tail})")
    for text in stats.reasons[:3]:
        print("    ", text)

# %% [markdown]
# Two traps of the counters. `torch.compiler.reset()` empties the caches but not
# `counters`; and a compiled frame is cached on the function's code, so wrapping it again
# with the same backend compiles nothing. A *new* backend object is another matter: it
# fails a guard of its own.

# %%
kept = dict(counters["frames"])
torch.compiler.reset()
print("counters survive reset:", dict(counters["frames"]) == kept)


def f(x):
    return x.sin() + 1


ok = counters["frames"]["ok"]
torch.compile(f, backend="eager")(torch.randn(3))
torch.compile(f, backend="eager")(torch.randn(3))
print("two wrappers, one backend: frames compiled", counters["frames"]["ok"] - ok)
guard_failures.clear()
other = CompileCounterWithBackend("eager")
torch.compile(f, backend=other)(torch.randn(3))
print("a new backend object: graphs", other.frame_count)
print("  its reason:", [t[:60] for texts in guard_failures.values() for t in texts])

# %% [markdown]
# ## Graph breaks (task ch09a.3)
#
# The book's gate: a `.item()`, a `print`, and a Python `if` on a tensor.


# %%
class BooksGate(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.lin(x)
        peak = h.abs().amax().item()
        print(f"peak |activation| {peak:.3f}")
        if h.mean() > 0:
            gated = torch.relu(h)
        else:
            gated = -torch.relu(-h)
        return gated / peak


torch.manual_seed(0)
book_gate = BooksGate()
batches = [torch.randn(4, 8) for _ in range(3)]

# %% [markdown]
# **Predict before you run the next cell.** How many graphs does `explain` find in one
# call? Does `fullgraph=True` refuse a function whose only break is `.item()`? And how many
# graphs does a `dynamic=False` compile need for three batches of one shape?

# %%
my_guess = {"graphs in one call": None, "fullgraph refuses .item()": None, "graphs for 3": None}

# %%
report = torch._dynamo.explain(book_gate)(batches[0])
print(f"explain: {report.graph_count} graphs, {report.graph_break_count} breaks")
for r in report.break_reasons:
    print("  reason:", r.reason.splitlines()[0])
torch.compiler.reset()
try:
    torch.compile(lambda x: x / x.abs().amax().item(), backend="eager", fullgraph=True)(batches[0])
    print("fullgraph=True accepted a function with .item()")
except Exception as exc:  # noqa: BLE001 - the lab shows what happened
    print("fullgraph=True refused:", type(exc).__name__)
torch.compiler.reset()
guard_failures.clear()
counting = CompileCounterWithBackend("eager")
compiled = torch.compile(book_gate, backend=counting, dynamic=False)
for x in batches:
    compiled(x)
print(f"three batches of one shape: {counting.frame_count} graphs")
texts = [t.split("#")[0].strip() for ts in guard_failures.values() for t in ts]
print("  the first guard that failed:", texts[0] if texts else None)

# %% [markdown]
# Your `NormalizedGate` still has all three breaks. Repair it, then compare it with the
# gate's maths — output *and* gradients — on a batch whose mean is positive and one whose
# mean is negative. The book's gate is compared too.


# %%
def gate_maths(lin, x):
    h = lin(x)
    peak = h.abs().amax()  # a tensor: the gradient flows through the peak too
    gated = torch.relu(h) if h.mean() > 0 else -torch.relu(-h)
    return gated / peak


def output_and_grad(module, fn, x):
    module.zero_grad()
    out = fn(x)
    out.sum().backward()
    return out.detach(), module.lin.weight.grad.clone()


torch.manual_seed(0)
gate = comp.NormalizedGate()
report = torch._dynamo.explain(gate)(batches[0])
print(f"your gate: {report.graph_count} graph(s), {report.graph_break_count} breaks")
book_gate.load_state_dict(gate.state_dict())
for scale in (5.0, -5.0):
    x = batches[0].abs() * scale
    with torch.no_grad():
        sign = gate.lin(x).mean().sign().item()
    want = output_and_grad(gate, lambda x: gate_maths(gate.lin, x), x)
    for name, module in (("your gate", gate), ("book's gate", book_gate)):
        got = output_and_grad(module, module, x)
        same = [torch.allclose(a, b, atol=1e-6) for a, b in zip(got, want)]
        print(f"mean {sign:+.0f}, {name:<11}: output right {same[0]}, gradient right {same[1]}")

# %% [markdown]
# The book's gate divides by a Python float: the output is right and no gradient flows
# through the peak.
#
# ## Which guard failed (task ch09a.4)
#
# **Predict before you run the next cell.** For each second call, which guard fails,
# and what kind is it?


# %%
def scaled(x, n, flag, unused):
    return x * n if flag else x


first = (torch.randn(2, 4), 2, True, 0)
second_calls = {
    "float64 x": (torch.randn(2, 4).double(), 2, True, 0),
    "wider x (dynamic=False)": (torch.randn(2, 5), 2, True, 0),
    "n = 3": (torch.randn(2, 4), 3, True, 0),
    "flag = False": (torch.randn(2, 4), 2, False, 0),
    "unused = 7": (torch.randn(2, 4), 2, True, 7),
    "wider and float64 (dynamic=False)": (torch.randn(2, 5).double(), 2, True, 0),
}
my_guess = {name: None for name in second_calls}

# %%
for name, second in second_calls.items():
    extra = {"dynamic": False} if "dynamic=False" in name else {}
    found = lab.attempt(comp.guard_reasons, scaled, first, second, **extra)
    if found is None:
        break
    shown = [(r.argument, r.kind, r.text.split("#")[0].strip()) for r in found]
    print(f"{name:<34} {shown}")

# %% [markdown]
# ## Your tests
#
# The chapter's public tests, as `pytest exercises/ch09a` runs them:

# %%
torch.compiler.reset()
lab.run_tests("ch09a")
