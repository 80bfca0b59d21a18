"""Records guard-failure texts in the exact time order Dynamo appends them (one journal across
frames, rather than frame by frame) and counts a recompile as a successful compilation that carries
a recompile reason; ``serve`` pads every request on the right to the longest one and slices back
(a repair the reading names); the gate blends the two branches with a 0/1 factor.
"""

import torch
import torch._dynamo
import torch.nn.functional as F
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import (
    clear_compilation_metrics,
    counters,
    get_compilation_metrics,
    guard_failures,
)


class _JournaledTexts(list):
    """One frame's list of guard-failure texts that also appends each text to a shared log."""

    def __init__(self, log):
        super().__init__()
        self._log = log

    def append(self, text):
        super().append(text)
        self._log.append(text)


def compile_stats(fn, inputs, **compile_kwargs):
    """Compile ``fn`` from a clean Dynamo cache and call it on every item of ``inputs``.

    An item is a tuple of positional arguments (a bare tensor is a one-argument call).
    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager").
    Counts only this run, whatever was compiled before. Returns ``CompileStats``.
    """
    kwargs = dict(compile_kwargs)
    counting = CompileCounterWithBackend(kwargs.pop("backend", "eager"))
    torch.compiler.reset()  # also empties guard_failures, so every per-frame list is made below
    clear_compilation_metrics()
    start_ok = counters["frames"]["ok"]
    log = []
    plain_factory = guard_failures.default_factory
    guard_failures.default_factory = lambda: _JournaledTexts(log)
    graphs_after_first = None
    try:
        compiled = torch.compile(fn, backend=counting, **kwargs)
        for item in inputs:
            compiled(*(item if isinstance(item, tuple) else (item,)))
            if graphs_after_first is None:
                graphs_after_first = counting.frame_count
    finally:
        guard_failures.default_factory = plain_factory
    frames = counters["frames"]["ok"] - start_ok
    recompiles = 0
    for metric in get_compilation_metrics():
        if metric.fail_type is None and metric.recompile_reason:
            recompiles += 1
    breaks = 0 if not graphs_after_first else graphs_after_first - 1
    torch.compiler.reset()
    return CompileStats(frames, counting.frame_count, breaks, recompiles, list(log))


def serve(model, requests, backend="eager"):
    """Run ``model``, compiled with ``backend``, on requests (B, T_i) of varying length T_i.

    Returns the outputs in request order, equal to eager (<= 1e-5), after at most two
    compilations however many lengths arrive.
    """
    if not requests:
        return []
    longest = max(int(r.shape[1]) for r in requests)
    compiled = torch.compile(model, backend=backend)
    answers = []
    with torch.no_grad():
        for request in requests:
            length = int(request.shape[1])
            # pad on the right: a causal model's position t never looks at later positions
            padded = F.pad(request, (0, longest - length), value=0)
            answers.append(compiled(padded)[:, :length])
    return answers


class NormalizedGate(nn.Module):
    """x (B, D) -> (B, D): linear; keep the positive part if the batch's mean activation is
    positive, else the negative part; divide by the largest |activation| before gating."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x):
        z = self.lin(x)
        scale = torch.linalg.vector_norm(z, ord=float("inf"))  # max |z| as a 0-d tensor
        keep_positive = (z.mean() > 0).to(z.dtype)  # 1.0 or 0.0, no Python branch
        chosen = keep_positive * torch.relu(z) - (1 - keep_positive) * torch.relu(-z)
        return chosen / scale
