"""ch09a — Compiler debugging: count what torch.compile compiles, see which guard failed,
and repair programs that recompile or break the graph. Read course/ch09a.md, then replace
each NotImplementedError and repair each TODO(ch09a.K, repair)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import torch
import torch._dynamo
from torch import nn


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
    raise NotImplementedError("ch09a.1 compile_stats — see course/ch09a.md#counting-compilations")


def serve(
    model: nn.Module, requests: Sequence[torch.Tensor], backend: Any = "eager"
) -> list[torch.Tensor]:
    """Run ``model``, compiled with ``backend``, on requests (B, T_i) of varying length T_i.

    Returns the outputs in request order, equal to eager (<= 1e-5), after at most two
    compilations however many lengths (of at least 2: PyTorch gives a length of 1 a graph
    of its own) arrive.
    """
    compiled = torch.compile(model, backend=backend, dynamic=False)  # TODO(ch09a.2, repair)
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
        peak = h.abs().amax().item()  # TODO(ch09a.3, repair)
        print(f"peak |activation| {peak:.3f}")  # TODO(ch09a.3, repair)
        if h.mean() > 0:  # TODO(ch09a.3, repair)
            gated = torch.relu(h)
        else:
            gated = -torch.relu(-h)
        return gated / peak


def guard_reasons(
    fn: Callable, first: Any, second: Any, **compile_kwargs: Any
) -> list[GuardReason]:
    """Compile ``fn`` from a clean Dynamo cache on the call ``first`` (an argument tuple), then
    call it with ``second``.

    ``compile_kwargs`` go to ``torch.compile`` (``backend`` defaults to "eager"). Returns one
    ``GuardReason`` per guard that failed on the second call (empty when the compiled code was
    reused): which argument, and whether a shape, a dtype or a Python value.
    """
    raise NotImplementedError("ch09a.4 guard_reasons — see course/ch09a.md#which-guard-failed")
