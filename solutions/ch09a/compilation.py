"""ch09a — Compiler debugging: count what torch.compile compiles, see which guard failed,
and repair programs that recompile or break the graph. Reference solution."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import torch
import torch._dynamo
from torch import nn
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import (
    clear_compilation_metrics,
    counters,
    get_compilation_metrics,
    guard_failures,
)


class CompileStats(NamedTuple):
    """What compiling ``fn`` over a list of calls cost (see ``compile_stats``)."""

    frames: int  # Python frames Dynamo compiled successfully (counters["frames"]["ok"])
    graphs: int  # FX graphs handed to the backend
    graph_breaks: int  # breaks in one call's graph (explain's graph_break_count, first call)
    recompiles: int  # compilations of an already-compiled frame because a guard failed
    reasons: list[str]  # the guard-failure texts Dynamo recorded, in order


class GuardReason(NamedTuple):
    """One failed guard: the argument it watched, what it checked, and Dynamo's text."""

    argument: str  # the parameter name, e.g. "idx"
    kind: str  # "shape" | "dtype" | "value" | "other"
    text: str  # Dynamo's guard-failure message


class CausalTagger(nn.Module):
    """Token ids (B, T) int64 -> logits (B, T, V): embed, running mean over earlier positions, project."""

    def __init__(self, vocab: int = 32, dim: int = 16) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(vocab, dim) * 0.5)  # token embeddings
        self.proj = nn.Parameter(torch.randn(dim, vocab) / dim**0.5)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        h = self.table[idx]  # (B, T, D)
        steps = torch.arange(1, idx.shape[1] + 1, device=idx.device, dtype=h.dtype)  # (T,)
        h = torch.cumsum(h, dim=1) / steps[None, :, None]  # (B, T, D), causal running mean
        return torch.tanh(h) @ self.proj  # (B, T, V)


def _as_args(call: Any) -> tuple:
    return call if isinstance(call, tuple) else (call,)


def compile_stats(fn: Callable, inputs: Iterable[Any], **compile_kwargs: Any) -> CompileStats:
    """Compile ``fn`` from a clean Dynamo cache and call it on every item of ``inputs``.

    An item is a tuple of positional arguments (a bare tensor is a one-argument call).
    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager").
    Counts only this run, whatever was compiled before. Returns ``CompileStats``.
    """
    calls = [_as_args(c) for c in inputs]
    backend = compile_kwargs.pop("backend", "eager")
    torch.compiler.reset()  # forget cached code for fn; does NOT clear `counters`
    frames_before = counters["frames"]["ok"]
    clear_compilation_metrics()  # a bounded deque (64 entries): start it empty
    counting = CompileCounterWithBackend(backend)
    compiled = torch.compile(fn, backend=counting, **compile_kwargs)
    first_call_graphs = 0
    for k, args in enumerate(calls):
        compiled(*args)
        if k == 0:
            first_call_graphs = counting.frame_count  # the first call starts from nothing
    frames = counters["frames"]["ok"] - frames_before
    reasons = [text for texts in guard_failures.values() for text in texts]
    new_metrics = get_compilation_metrics()
    recompiles = sum(
        1 for m in new_metrics if m.fail_type is None and int(str(m.compile_id).split("/")[-1]) > 0
    )
    graph_breaks = max(0, first_call_graphs - 1)  # as explain() counts: graphs - 1
    torch.compiler.reset()
    return CompileStats(frames, counting.frame_count, graph_breaks, recompiles, reasons)


def serve(
    model: nn.Module, requests: Sequence[torch.Tensor], backend: Any = "eager"
) -> list[torch.Tensor]:
    """Run ``model``, compiled with ``backend``, on requests (B, T_i) of varying length T_i.

    Returns the outputs in request order, equal to eager (<= 1e-5), after at most two
    compilations however many lengths (of at least 2: PyTorch gives a length of 1 a graph
    of its own) arrive.
    """
    compiled = torch.compile(model, backend=backend, dynamic=None)  # T becomes symbolic
    with torch.no_grad():
        return [compiled(idx) for idx in requests]


class NormalizedGate(nn.Module):
    """x (B, D) -> (B, D): linear; keep the positive part if the batch's mean activation is
    positive, else the negative part; divide by the largest |activation| before gating."""

    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)  # (B, D)
        peak = h.abs().amax()  # a 0-d tensor stays in the graph (no .item())
        gated = torch.where(h.mean() > 0, torch.relu(h), -torch.relu(-h))  # no Python branch
        return gated / peak


_TENSOR_GUARD = re.compile(r"tensor '([^']+)' (\w+) mismatch")
_VALUE_GUARD = re.compile(r"^(?:L\[')?([A-Za-z_]\w*)(?:'\])? == ")


def _classify(text: str) -> GuardReason:
    body = re.sub(r"^\d+/\d+: ", "", text.strip())  # drop the "frame/compile" id
    m = _TENSOR_GUARD.match(body)  # a quoted source line may hold such words
    if m:
        what = m.group(2)
        kind = {"size": "shape", "stride": "shape", "dtype": "dtype"}.get(what, "other")
        return GuardReason(m.group(1), kind, text)
    m = _VALUE_GUARD.match(body)
    if m:
        return GuardReason(m.group(1), "value", text)
    return GuardReason("?", "other", text)


def guard_reasons(
    fn: Callable, first: Any, second: Any, **compile_kwargs: Any
) -> list[GuardReason]:
    """Compile ``fn`` from a clean Dynamo cache on the call ``first`` (an argument tuple), then
    call it with ``second``.

    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager"). Returns one
    ``GuardReason`` per guard that failed on the second call (empty when the compiled code was
    reused): which argument, and whether a shape, a dtype or a Python value.
    """
    backend = compile_kwargs.pop("backend", "eager")
    torch.compiler.reset()
    compiled = torch.compile(fn, backend=backend, **compile_kwargs)
    compiled(*_as_args(first))
    guard_failures.clear()
    compiled(*_as_args(second))
    found = [_classify(text) for texts in guard_failures.values() for text in texts]
    torch.compiler.reset()
    return found
