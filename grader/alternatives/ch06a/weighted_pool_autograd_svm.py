"""masked_mean divides the mask by the count first and sums weighted values (another rounding);
sequence_scores pools each example's valid positions with boolean indexing; hinge_loss uses
torch.maximum (subgradient 1/2 at the kink); the SVM is trained in float32 by autograd and
torch.optim.Adam, keeping the best iterate; distances come from a Gram matrix of float32 draws."""

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Mean of ``x`` over ``dim`` counting only positions where ``mask`` is True (0 if none)."""
    dim = dim % x.dim()
    keep = (mask != 0).expand(x.shape[: mask.dim()])
    count = keep.sum(dim=dim, keepdim=True).clamp(min=1)
    weights = keep.to(x.dtype) / count.to(x.dtype)  # 1/count at valid positions, 0 at padding
    extra = (1,) * (x.dim() - keep.dim())  # let the mask broadcast over the trailing axes
    cleaned = x.masked_fill(~keep.reshape(*keep.shape, *extra), 0)  # a new tensor
    return (cleaned * weights.reshape(*weights.shape, *extra)).sum(dim=dim)


def sequence_scores(
    x: torch.Tensor,
    mask: torch.Tensor,
    head: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Score every position of x[B, T, E] with ``head``, then average each example's valid ones."""
    scorer = _feature_mean if head is None else head
    scored = scorer(x).flatten(start_dim=1)  # (B, T)
    keep = mask != 0
    pooled = []
    for row, valid in zip(scored, keep):
        picked = row[valid]  # only this example's real positions
        pooled.append(picked.sum() / max(picked.numel(), 1))
    if not pooled:
        return scored.new_zeros(0)
    return torch.stack(pooled)


def hinge_loss(scores: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """max(0, 1 - y * scores) per example; reduction "mean", "sum" or "none"."""
    if scores.shape != y.shape:
        raise ValueError(
            f"hinge_loss: got scores {list(scores.shape)} and labels {list(y.shape)}; "
            "the shapes must match exactly"
        )
    reducers = {"none": lambda t: t, "sum": torch.sum, "mean": torch.mean}
    if reduction not in reducers:
        raise ValueError(f"hinge_loss: reduction must be one of {sorted(reducers)}")
    slack = 1 - scores * y.to(scores.dtype)
    return reducers[reduction](torch.maximum(slack, torch.zeros_like(slack)))


def train_linear_svm(
    X: torch.Tensor, y: torch.Tensor, C: float = 1.0, steps: int = 600, lr: float = 0.05
) -> tuple[torch.Tensor, float]:
    """Minimize 0.5 * ||w||^2 + C * sum of hinge losses by autograd and torch.optim.Adam (float32,
    step size decaying linearly to 0); returns the best (w [D], b float) visited."""
    X = X.detach().to(torch.float32)
    y = y.detach().to(torch.float32)
    w = torch.zeros(X.shape[1], requires_grad=True)
    b = torch.zeros((), requires_grad=True)
    optimizer = torch.optim.Adam([w, b], lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1 - k / max(steps, 1))

    def objective() -> torch.Tensor:
        return 0.5 * (w * w).sum() + C * hinge_loss(X @ w + b, y, reduction="sum")

    best = (float("inf"), w.detach().clone(), 0.0)
    for _ in range(steps):
        optimizer.zero_grad()
        value = objective()
        if value.item() < best[0]:  # a subgradient method does not descend at every step
            best = (value.item(), w.detach().clone(), b.item())
        value.backward()
        optimizer.step()
        schedule.step()
    with torch.no_grad():
        if objective().item() < best[0]:
            best = (objective().item(), w.detach().clone(), b.item())
    return best[1], float(best[2])


def distance_concentration(
    dims: Sequence[int], n: int, generator: torch.Generator | None = None
) -> list[float]:
    """Relative contrast (max - min) / min of distinct-pair distances of n uniform points."""
    result = []
    upper = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)  # pairs i < j
    for d in dims:
        points = torch.rand(n, d, generator=generator, dtype=torch.float32).to(torch.float64)
        sq = (points * points).sum(dim=1)
        gram = points @ points.T
        dist = (sq[:, None] + sq[None, :] - 2 * gram).clamp(min=0).sqrt()
        pairs = dist[upper]
        near, far = pairs.min(), pairs.max()
        result.append(float((far - near) / near))
    return result
