"""masked_mean gathers only the valid entries (boolean indexing) and adds them per row with
index_add, so padding is never read at all; sequence_scores reshapes the head's output to [B, T];
hinge_loss uses relu (whose subgradient at the kink is 0, not 1) and checks the reduction name
first; the contrast uses torch.pdist on the same draws. All within the chapter's contract."""

import math

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Mean of ``x`` over ``dim`` counting only positions where ``mask`` is True (0 if none)."""
    dim = dim % x.dim()
    depth = mask.dim()  # the mask covers x.shape[:depth], and depth > dim
    keep = (mask != 0).expand(x.shape[:depth])
    # put the pooled axis last among the masked ones, then fold the other masked axes together
    keep = keep.movedim(dim, depth - 1)
    values = x.movedim(dim, depth - 1)
    outer, tail = keep.shape[:-1], values.shape[depth:]
    groups, length = math.prod(outer), keep.shape[-1]
    keep = keep.reshape(groups, length)
    values = values.reshape(groups, length, *tail)
    rows, cols = keep.nonzero(as_tuple=True)
    valid = values[rows, cols]  # (number of valid positions, *tail): padding is never touched
    total = values.new_zeros((groups, *tail)).index_add(0, rows, valid)
    count = torch.bincount(rows, minlength=groups).clamp(min=1).to(x.dtype)
    mean = total / count.reshape(groups, *([1] * len(tail)))
    return mean.reshape((*outer, *tail))


def sequence_scores(
    x: torch.Tensor,
    mask: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """One score per example: score every position of x[B, T, E], then average the valid ones."""
    scorer = _feature_mean if head is None else head
    batch, positions = x.shape[0], x.shape[1]
    per_position = scorer(x).reshape(batch, positions)  # (B, T, 1) -> (B, T)
    return masked_mean(per_position, mask, dim=-1)


def hinge_loss(scores: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """max(0, 1 - y * scores) per example; reduction "mean", "sum" or "none"."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"unknown reduction {reduction!r}: use 'mean', 'sum' or 'none'")
    if tuple(scores.shape) != tuple(y.shape):
        raise ValueError(f"scores have shape {tuple(scores.shape)} but labels {tuple(y.shape)}")
    per_example = torch.relu(1.0 - scores * y.to(dtype=scores.dtype))
    if reduction == "sum":
        return per_example.sum()
    if reduction == "mean":
        return per_example.mean()
    return per_example


def distance_concentration(
    dims: Sequence[int], n: int, generator: torch.Generator | None = None
) -> list[float]:
    """Relative contrast (max - min) / min of distinct-pair distances of n uniform points."""
    contrasts = []
    for d in dims:
        points = torch.rand(n, d, generator=generator, dtype=torch.float64)
        pairs = torch.pdist(points)  # each unordered pair of distinct points once
        contrasts.append((pairs.max() / pairs.min() - 1.0).item())
    return contrasts
