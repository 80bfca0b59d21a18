"""ch06a — Beyond 3D: feature spaces and an SVM. A sequence of embeddings is a cloud of
points in a space of hundreds of dimensions, where padding must not count, any labelling
of a few points is separable, and distances stop telling near from far. Read
course/ch06a.md, then replace each NotImplementedError and repair the program marked
TODO(ch06a.2, repair)."""

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
    raise NotImplementedError("ch06a.1 masked_mean — see course/ch06a.md#padding-must-not-count")


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
    scores = head(x)  # (B, T, 1): one score per (example, position)
    return scores.mean(dim=1)  # TODO(ch06a.2, repair)  (B, 1), and padding counts


def hinge_loss(scores: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """max(0, 1 - y * scores) per example, for labels y in {-1, +1} of the same shape as
    ``scores`` (ValueError otherwise); reduction "mean" (default), "sum" or "none" (any
    other name is a ValueError). Scores of any floating dtype, and the loss in the scores'
    dtype; a nan score gives a nan loss."""
    raise NotImplementedError("ch06a.3 hinge_loss — see course/ch06a.md#the-hinge")


def train_linear_svm(
    X: torch.Tensor, y: torch.Tensor, C: float = 1.0, steps: int = 600, lr: float = 0.05
) -> tuple[torch.Tensor, float]:
    """Soft-margin linear SVM on ``X[N, D]`` with labels ``y[N]`` in {-1, +1} (floats or
    integers): minimizes 0.5 * ||w||^2 + C * sum_i max(0, 1 - y_i (w . x_i + b)).
    Returns (w [D], b float)."""
    raise NotImplementedError("ch06a.4 train_linear_svm — see course/ch06a.md#a-linear-svm")


def distance_concentration(
    dims: Sequence[int], n: int, generator: torch.Generator | None = None
) -> list[float]:
    """For each d in ``dims``: draw ``n`` points uniformly in the unit cube [0, 1]^d from
    ``generator`` (the global generator when None) and return the relative contrast
    (max - min) / min of the distances between distinct pairs."""
    raise NotImplementedError(
        "ch06a.5 distance_concentration — see course/ch06a.md#when-distances-stop-meaning-much"
    )
