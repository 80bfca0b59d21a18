"""A whole module written from the stub, the public tests and the reading alone, without
sight of the reference (to calibrate the similarity report, ``tests/test_similarity.py``):
every definition the student writes, in its own way (the given ones stay the solution's).
It passed every public and hidden test when it was written, and must keep passing them."""

from collections.abc import Callable, Sequence

import numpy as np
import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Mean of ``x`` over dimension ``dim``, counting only positions where ``mask`` is True.

    ``mask`` (bool or 0/1) has the leading dimensions of ``x``, at least up to and including
    ``dim``: x[B, T, E], mask[B, T], dim=1 -> [B, E]; x[T, B, E], mask[T, B], dim=0 -> [B, E].
    Values at padded positions (however large, inf or nan) change neither the result nor its
    gradient; x and mask are left unchanged; a row with no valid position gives 0.
    """
    axis = dim % x.dim() if -x.dim() <= dim < x.dim() else None
    if axis is None:
        raise ValueError(f"dim={dim} is out of range for a tensor of {x.dim()} dimensions")
    if mask.dim() <= axis or mask.dim() > x.dim() or x.shape[: mask.dim()] != mask.shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} must match the leading dimensions of x "
            f"{tuple(x.shape)}, at least up to dim {axis}"
        )
    valid = mask.to(torch.bool) if mask.dtype != torch.bool else mask
    # trailing singleton axes so the mask lines up with x from the left, not the right
    valid = valid.reshape(*valid.shape, *([1] * (x.dim() - valid.dim())))
    values = x if x.is_floating_point() or x.is_complex() else x.to(torch.get_default_dtype())
    kept = torch.where(valid, values, torch.zeros((), dtype=values.dtype, device=values.device))
    total = kept.sum(dim=axis)
    count = valid.sum(dim=axis).clamp(min=1).to(total.real.dtype)  # empty rows: 0 / 1
    return total / count


def sequence_scores(
    x: torch.Tensor,
    mask: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """One score per example: ``head`` scores every position of ``x[B, T, E]`` (an
    ``nn.Linear(E, 1)`` gives (B, T, 1)), then the valid positions of ``mask[B, T]`` are
    averaged. Returns shape [B]. Without a head a position's score is its features' mean."""
    score_fn = _feature_mean if head is None else head
    per_position = score_fn(x)  # (B, T, 1): one number per (example, position)
    batch, steps = x.shape[0], x.shape[1]
    per_position = per_position.reshape(batch, steps)  # drop the size-1 output axis
    return masked_mean(per_position, mask, dim=1)  # (B,), padding left out


_REDUCTIONS = ("mean", "sum", "none")


def hinge_loss(scores: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """max(0, 1 - y * scores) per example, for labels y in {-1, +1} of the same shape as
    ``scores`` (ValueError otherwise); reduction "mean" (default), "sum" or "none" (any
    other name is a ValueError). Scores of any floating dtype, and the loss in the scores'
    dtype; a nan score gives a nan loss."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if scores.shape != y.shape:
        raise ValueError(
            f"scores {tuple(scores.shape)} and labels {tuple(y.shape)} differ in shape; they "
            "would broadcast into a table of every score against every label"
        )
    # The loss is in the scores' dtype (a clause added after this module was written):
    # left to type promotion, float64 labels would make a float32 score's loss float64.
    margins = 1 - y.to(scores.dtype) * scores
    losses = margins.clamp(min=0)
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


def _smo_dual(
    gram_col: Callable[[int], np.ndarray],
    diag: np.ndarray,
    labels: np.ndarray,
    C: float,
    tol: float,
    max_iter: int,
) -> np.ndarray:
    """Solve the SVM dual  min 0.5 a'Qa - sum(a),  0 <= a <= C,  labels'a = 0  with
    Q = diag(labels) K diag(labels), by sequential minimal optimisation on the most
    violating pair (second-order choice of the partner). Returns the multipliers."""
    n = labels.shape[0]
    alpha = np.zeros(n)
    grad = -np.ones(n)  # gradient of the dual objective at alpha
    pos, neg = labels > 0, labels < 0
    for _ in range(max_iter):
        below_c, above_0 = alpha < C, alpha > 0
        can_rise = (below_c & pos) | (above_0 & neg)
        can_fall = (below_c & neg) | (above_0 & pos)
        if not can_rise.any() or not can_fall.any():
            break
        viol = -labels * grad
        up_score = np.where(can_rise, viol, -np.inf)
        i = int(np.argmax(up_score))
        top = up_score[i]
        low_score = np.where(can_fall, viol, np.inf)
        if top - low_score.min() < tol:
            break
        col_i = gram_col(i)
        gap = top - viol  # > 0 for useful partners
        curv = diag[i] + diag - 2.0 * col_i
        curv = np.where(curv > 1e-12, curv, 1e-12)
        gain = np.where(can_fall & (gap > 0), -(gap * gap) / curv, np.inf)
        j = int(np.argmin(gain))
        col_j = gram_col(j)
        step = gap[j] / curv[j]
        # keep both multipliers inside the box
        room_i = C - alpha[i] if labels[i] > 0 else alpha[i]
        room_j = alpha[j] if labels[j] > 0 else C - alpha[j]
        step = min(step, room_i, room_j)
        if step <= 0:
            break
        alpha[i] += labels[i] * step
        alpha[j] -= labels[j] * step
        for k in (i, j):  # snap onto the bounds so the active sets stay exact
            if alpha[k] < 1e-12 * C:
                alpha[k] = 0.0
            elif alpha[k] > C * (1 - 1e-12):
                alpha[k] = C
        grad += step * labels * (col_i - col_j)
    return alpha


def _best_offset(margins: np.ndarray, labels: np.ndarray) -> float:
    """The b minimising sum_i max(0, 1 - y_i (m_i + b)) for fixed scores m: the minimum of
    this convex piecewise-linear function sits at a kink b = y_i - m_i; ties are split."""
    kinks = np.unique(labels - margins)
    best_vals = np.empty(kinks.shape[0])
    for start in range(0, kinks.shape[0], 1024):
        chunk = kinks[start : start + 1024]
        slack = 1.0 - labels[None, :] * (margins[None, :] + chunk[:, None])
        best_vals[start : start + 1024] = np.maximum(slack, 0.0).sum(axis=1)
    lowest = best_vals.min()
    tied = kinks[best_vals <= lowest + 1e-12 * max(1.0, abs(lowest))]
    return float(0.5 * (tied.min() + tied.max()))


def train_linear_svm(
    X: torch.Tensor, y: torch.Tensor, C: float = 1.0, steps: int = 600, lr: float = 0.05
) -> tuple[torch.Tensor, float]:
    """Soft-margin linear SVM on ``X[N, D]`` with labels ``y[N]`` in {-1, +1} (floats or
    integers): minimizes 0.5 * ||w||^2 + C * sum_i max(0, 1 - y_i (w . x_i + b)).
    Returns (w [D], b float).

    Solved exactly through the dual problem (SMO), then b is chosen optimally for the
    resulting w; ``steps`` and ``lr`` are accepted for the common signature and unused."""
    if X.dim() != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"expected X[N, D] and y[N], got {tuple(X.shape)} and {tuple(y.shape)}")
    if C <= 0:
        raise ValueError(f"C must be positive, got {C}")
    feats = X.detach().cpu().to(torch.float64).numpy()
    labels = y.detach().cpu().to(torch.float64).numpy()
    if not np.all(np.abs(labels) == 1.0):
        raise ValueError("labels must be -1 or +1")
    n = feats.shape[0]
    out_dtype = X.dtype if X.is_floating_point() else torch.get_default_dtype()
    if n == 0:
        return torch.zeros(X.shape[1], dtype=out_dtype), 0.0

    gram = feats @ feats.T if n <= 3000 else None  # small problems: keep the whole kernel

    def column(k: int) -> np.ndarray:
        return gram[:, k] if gram is not None else feats @ feats[k]

    diag = np.einsum("nd,nd->n", feats, feats)
    alpha = _smo_dual(column, diag, labels, float(C), tol=1e-4, max_iter=max(100_000, 50 * n))
    w = (alpha * labels) @ feats
    b = _best_offset(feats @ w, labels)
    return torch.as_tensor(w, dtype=out_dtype, device=X.device), b


def distance_concentration(
    dims: Sequence[int], n: int, generator: torch.Generator | None = None
) -> list[float]:
    """For each d in ``dims``: draw ``n`` points uniformly in the unit cube [0, 1]^d from
    ``generator`` (the global generator when None) and return the relative contrast
    (max - min) / min of the distances between distinct pairs."""
    if n < 2:
        raise ValueError("need at least two points to have a pair")
    result: list[float] = []
    for d in dims:
        cloud = torch.rand(n, int(d), generator=generator)
        pair_dists = torch.pdist(cloud.to(torch.float64))  # each unordered pair once
        near, far = pair_dists.min(), pair_dists.max()
        result.append(float((far - near) / near))
    return result
