"""Short evidence for failure messages: what was observed, never a wall of numbers.

    judge.close(got, want, "pairwise_sq_dists: ...", atol=1e-5, rtol=1e-4)  # see harness.judge

``brief`` summarises any value in a line; ``first_difference`` says where two tensors
(or nested sequences of numbers) first disagree, and by how much.
"""

from __future__ import annotations

import math

import torch

ENTRIES_SHOWN = 4


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float | int):
        return f"{v:.4g}" if isinstance(v, float) and math.isfinite(v) else str(v)
    return repr(v)


def brief(x, limit: int = 160) -> str:
    """One line about ``x``: a tensor's shape, dtype and first entries; a long list's
    length and first items; a long string's start."""
    if isinstance(x, torch.Tensor):
        flat = x.detach().reshape(-1)
        head = ", ".join(_fmt(v.item()) for v in flat[:ENTRIES_SHOWN])
        more = ", ..." if flat.numel() > ENTRIES_SHOWN else ""
        dtype = str(x.dtype).removeprefix("torch.")
        return f"tensor of shape {tuple(x.shape)} {dtype} [{head}{more}]"
    if isinstance(x, list | tuple) and len(x) > ENTRIES_SHOWN:
        head = ", ".join(brief(v, 40) for v in x[:ENTRIES_SHOWN])
        return f"{type(x).__name__} of {len(x)} [{head}, ...]"
    text = repr(x)
    return text if len(text) <= limit else text[: limit - 5] + " ...]"


def first_difference(
    got, expected, atol: float = 1e-5, rtol: float = 1e-4, equal_nan: bool = True
) -> str:
    """Where ``got`` first differs from ``expected`` beyond the tolerances, in a line
    (``equal_nan``: a NaN where a NaN is expected counts as agreeing)."""
    if not isinstance(got, torch.Tensor):
        try:
            got = torch.as_tensor(got, dtype=torch.float64)
        except (TypeError, ValueError, RuntimeError):
            return f"got {brief(got)}, expected {brief(expected)}"
    expected = torch.as_tensor(expected)
    if tuple(got.shape) != tuple(expected.shape):
        return f"got shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    g, e = got.detach().double(), expected.detach().double()
    bad = ~torch.isclose(g, e, atol=atol, rtol=rtol, equal_nan=equal_nan)
    if not bad.any():
        return "no entry differs beyond the tolerance"
    where = tuple(int(i) for i in bad.nonzero()[0])
    gap = (g - e).abs()[bad]
    gap = gap[torch.isfinite(gap)]
    largest = f", largest gap {gap.max().item():.3g}" if gap.numel() else ""
    return (
        f"{int(bad.sum())} of {bad.numel()} entries differ{largest}; first at "
        f"{list(where)}: got {_fmt(g[where].item())}, expected {_fmt(e[where].item())}"
    )
