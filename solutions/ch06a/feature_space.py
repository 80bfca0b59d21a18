"""ch06a — Beyond 3D: feature spaces and an SVM. A sequence of embeddings is a cloud of
points in a space of hundreds of dimensions, where padding must not count, any labelling
of a few points is separable, and distances stop telling near from far. Reference solution."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def _feature_mean(x: torch.Tensor) -> torch.Tensor:
    """The default per-position score: the mean of a position's E features, kept as (..., 1)."""
    return x.mean(dim=-1, keepdim=True)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Mean of ``x`` over dimension ``dim``, counting only positions where ``mask`` is True.

    ``mask`` (bool or 0/1) has the leading dimensions of ``x``, at least up to and including
    ``dim``: x[B, T, E], mask[B, T], dim=1 -> [B, E]; x[T, B, E], mask[T, B], dim=0 -> [B, E].
    Values at padded positions (however large, inf or nan) change neither the result nor its
    gradient; x and mask are left unchanged; a row with no valid position gives 0.
    """
    dim = dim % x.dim()
    keep = mask.to(torch.bool)
    keep = keep.reshape(*keep.shape, *([1] * (x.dim() - keep.dim())))  # trailing dims -> 1
    total = torch.where(keep, x, torch.zeros((), dtype=x.dtype)).sum(dim=dim)  # padding -> 0
    count = keep.sum(dim=dim).clamp(min=1).to(x.dtype)  # valid positions, at least 1
    return total / count


def sequence_scores(
    x: torch.Tensor,
    mask: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """One score per example: ``head`` scores every position of ``x[B, T, E]`` (an
    ``nn.Linear(E, 1)`` gives (B, T, 1)), then the valid positions of ``mask[B, T]`` are
    averaged. Returns shape [B]. Without a head a position's score is its features' mean."""
    if head is None:
        head = _feature_mean
    per_position = head(x).squeeze(-1)  # (B, T, 1) -> (B, T)
    return masked_mean(per_position, mask, dim=1)  # (B,)


def hinge_loss(scores: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """max(0, 1 - y * scores) per example, for labels y in {-1, +1} of the same shape as
    ``scores`` (ValueError otherwise); reduction "mean" (default), "sum" or "none" (any
    other name is a ValueError). Scores of any floating dtype, and the loss in the scores'
    dtype; a nan score gives a nan loss."""
    if scores.shape != y.shape:
        raise ValueError(
            f"hinge_loss: scores {tuple(scores.shape)} and labels {tuple(y.shape)} differ in shape; "
            "they would broadcast into a table of every score against every label"
        )
    losses = torch.clamp(1 - y.to(scores.dtype) * scores, min=0)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction == "mean":
        return losses.mean()
    raise ValueError(f"hinge_loss: unknown reduction {reduction!r}")


def train_linear_svm(
    X: torch.Tensor, y: torch.Tensor, C: float = 1.0, steps: int = 600, lr: float = 0.05
) -> tuple[torch.Tensor, float]:
    """Soft-margin linear SVM on ``X[N, D]`` with labels ``y[N]`` in {-1, +1} (floats or
    integers): minimizes 0.5 * ||w||^2 + C * sum_i max(0, 1 - y_i (w . x_i + b)).
    Returns (w [D], b float)."""
    X = X.to(torch.float64)
    y = y.to(torch.float64)
    w = torch.zeros(X.shape[1], dtype=torch.float64)
    b = torch.zeros((), dtype=torch.float64)
    m = [torch.zeros_like(w), torch.zeros_like(b)]  # Adam: running mean of the subgradient
    v = [torch.zeros_like(w), torch.zeros_like(b)]  # ... and of its square
    beta1, beta2 = 0.9, 0.999
    for k in range(1, steps + 1):
        inside = (y * (X @ w + b) < 1).to(X.dtype)  # (N,) examples inside the margin
        pull = C * inside * y  # (N,) each one pulls the plane toward classifying it
        grads = (w - pull @ X, -pull.sum())  # subgradient of the objective: (D,), ()
        step = lr * (1 - (k - 1) / steps)  # decays to 0: a subgradient method needs it
        for p, g, mp, vp in zip((w, b), grads, m, v):
            mp.mul_(beta1).add_(g, alpha=1 - beta1)
            vp.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            p -= step * (mp / (1 - beta1**k)) / ((vp / (1 - beta2**k)).sqrt() + 1e-8)
    return w.to(torch.float32), float(b)


def distance_concentration(
    dims: Sequence[int], n: int, generator: torch.Generator | None = None
) -> list[float]:
    """For each d in ``dims``: draw ``n`` points uniformly in the unit cube [0, 1]^d from
    ``generator`` (the global generator when None) and return the relative contrast
    (max - min) / min of the distances between distinct pairs."""
    out = []
    for d in dims:
        pts = torch.rand(n, d, generator=generator, dtype=torch.float64)  # (n, d)
        dist = torch.cdist(pts, pts)  # (n, n), zeros on the diagonal
        i, j = torch.triu_indices(n, n, offset=1)  # each distinct pair once
        pair = dist[i, j]
        out.append(float((pair.max() - pair.min()) / pair.min()))
    return out
