"""train_linear_svm solves the SVM's dual problem with SMO (pairs of multipliers, each step an
exact line search, run in NumPy) instead of subgradient descent on the primal, then reads w and
b off the optimal multipliers. Same objective, same (w, b) contract; ``steps`` bounds the number
of pair updates (100 per step) and ``lr`` is not needed."""

import numpy as np
import torch


def train_linear_svm(
    X: torch.Tensor, y: torch.Tensor, C: float = 1.0, steps: int = 600, lr: float = 0.05
) -> tuple[torch.Tensor, float]:
    """Soft-margin linear SVM on X[N, D], labels y[N] in {-1, +1}: minimizes
    0.5 * ||w||^2 + C * sum_i max(0, 1 - y_i (w . x_i + b)). Returns (w [D], b float)."""
    points = X.detach().to(torch.float64).cpu().numpy()
    labels = y.detach().to(torch.float64).cpu().numpy().reshape(-1)
    C = float(C)
    gram = points @ points.T  # (N, N) dot products
    alpha = np.zeros(len(labels))
    # score_t = y_t - w . x_t: the offset b that would put example t exactly on its margin;
    # it is -y_t times the gradient of the dual 0.5 a'Qa - sum(a), Q_ij = y_i y_j x_i . x_j
    score = labels.copy()
    positive = labels > 0

    def extremes() -> tuple[float, int, float, int]:
        can_rise = np.where(positive, alpha < C, alpha > 0)  # b may still need to go up
        can_fall = np.where(positive, alpha > 0, alpha < C)  # ... or down
        high = np.where(can_rise, score, -np.inf)
        low = np.where(can_fall, score, np.inf)
        i, j = int(high.argmax()), int(low.argmin())
        return float(high[i]), i, float(low[j]), j

    for _ in range(100 * max(int(steps), 1)):
        top, i, bottom, j = extremes()
        if top - bottom <= 1e-8:
            break  # the KKT conditions hold: optimal
        curvature = max(gram[i, i] + gram[j, j] - 2 * gram[i, j], 1e-12)
        room_i = C - alpha[i] if positive[i] else alpha[i]
        room_j = alpha[j] if positive[j] else C - alpha[j]
        t = min((top - bottom) / curvature, room_i, room_j)
        alpha[i] = min(max(alpha[i] + labels[i] * t, 0.0), C)
        alpha[j] = min(max(alpha[j] - labels[j] * t, 0.0), C)
        score -= t * (gram[:, i] - gram[:, j])

    w = (alpha * labels) @ points
    top, _, bottom, _ = extremes()
    free = (alpha > 1e-12 * C) & (alpha < C * (1 - 1e-12))
    if free.any():
        b = float(score[free].mean())
    elif np.isinf(top) or np.isinf(bottom):
        b = bottom if np.isinf(top) else top  # only one side bounds b
    else:
        b = 0.5 * (top + bottom)
    return torch.from_numpy(w).to(torch.float32), b
