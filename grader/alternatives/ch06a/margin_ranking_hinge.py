"""hinge_loss through torch's own margin-ranking loss: max(0, -y * (score - 0) + 1) is the
hinge max(0, 1 - y * score) term for term, computed by a library loss that has kernels for
every floating dtype (float16 and bfloat16 included), keeps a nan score as a nan loss and
reduces by the same three names. The contract fixes the values, not the op that makes them."""

import torch.nn.functional as F


def hinge_loss(scores, y, reduction="mean"):
    if scores.shape != y.shape:
        raise ValueError(f"hinge_loss: shapes {tuple(scores.shape)} and {tuple(y.shape)} differ")
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"hinge_loss: unknown reduction {reduction!r}")
    zero = torch.zeros_like(scores)
    return F.margin_ranking_loss(scores, zero, y.to(scores.dtype), margin=1.0, reduction=reduction)
