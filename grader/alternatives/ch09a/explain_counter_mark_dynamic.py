"""Counts graph breaks with ``torch._dynamo.explain`` on the first call, graphs with a hand-written
counting backend and recompiles as "successful compilations minus distinct frames"; ``serve``
marks T dynamic on an alias of each request; the gate keeps parts by multiplying with a sign mask
and takes ``max()``. Each is a tool the chapter names (explain, a counting backend, mark_dynamic).
"""

import torch
import torch._dynamo
from torch import nn
from torch._dynamo.utils import (
    clear_compilation_metrics,
    counters,
    get_compilation_metrics,
    guard_failures,
)


def compile_stats(fn, inputs, **compile_kwargs):
    """Compile ``fn`` from a clean Dynamo cache and call it on every item of ``inputs``.

    An item is a tuple of positional arguments (a bare tensor is a one-argument call).
    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager").
    Counts only this run, whatever was compiled before. Returns ``CompileStats``.
    """
    arg_lists = [item if isinstance(item, tuple) else (item,) for item in inputs]
    options = dict(compile_kwargs)
    target = torch._dynamo.lookup_backend(options.pop("backend", "eager"))

    breaks = 0
    if arg_lists:
        # explain resets Dynamo before and after itself, so it leaves nothing cached behind
        breaks = max(0, torch._dynamo.explain(fn)(*arg_lists[0]).graph_break_count)

    torch._dynamo.reset()
    clear_compilation_metrics()
    ok_before = counters["frames"]["ok"]
    handed = []

    def tally(gm, example_inputs):
        handed.append(gm)
        return target(gm, example_inputs)

    runner = torch.compile(fn, backend=tally, **options)
    for args in arg_lists:
        runner(*args)

    frames = counters["frames"]["ok"] - ok_before
    succeeded = [m for m in get_compilation_metrics() if m.fail_type is None]
    first_seen = {str(m.compile_id).partition("/")[0] for m in succeeded}
    recompiles = len(succeeded) - len(first_seen)
    texts = []
    for per_frame in guard_failures.values():
        texts.extend(per_frame)
    torch._dynamo.reset()
    return CompileStats(frames, len(handed), breaks, recompiles, texts)


def serve(model, requests, backend="eager"):
    """Run ``model``, compiled with ``backend``, on requests (B, T_i) of varying length T_i.

    Returns the outputs in request order, equal to eager (<= 1e-5), after at most two
    compilations however many lengths arrive.
    """
    compiled = torch.compile(model, backend=backend)
    results = []
    with torch.no_grad():
        for request in requests:
            alias = request.view(request.shape)  # a new tensor object: the caller's stays unmarked
            if alias.shape[1] >= 2:  # size 1 is always specialised, never symbolic
                torch._dynamo.mark_dynamic(alias, 1)
            results.append(compiled(alias))
    return results


class NormalizedGate(nn.Module):
    """x (B, D) -> (B, D): linear; keep the positive part if the batch's mean activation is
    positive, else the negative part; divide by the largest |activation| before gating."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        pre = self.lin(x)
        largest = pre.abs().max()  # full reduction to a 0-d tensor, still differentiable
        upper = pre * (pre > 0)  # the positive part; like relu, no gradient where pre == 0
        lower = pre * (pre < 0)  # the negative part
        return torch.where(pre.mean() > 0, upper, lower) / largest
