"""The repair of ``standardize_channels_`` keeps the chapter's transposed window but never
flattens it: statistics come from ``torch.var_mean`` over the window's last three axes and
the update multiplies by ``rsqrt`` through the window, so the writes land in ``x``.
``broadcast_shape`` reads sizes by negative index instead of padding the shapes."""

import torch


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasting ``a`` with ``b`` produces, as a tuple of ints.

    Shapes are aligned from the right; two sizes agree when equal or when one is 1.
    Raises ``ValueError`` naming the dimension (and both sizes) where they disagree.
    """
    first, second = list(a), list(b)
    rank = max(len(first), len(second))
    merged = [0] * rank
    for dim in range(-1, -rank - 1, -1):
        p = int(first[dim]) if -dim <= len(first) else 1
        q = int(second[dim]) if -dim <= len(second) else 1
        if p != q and 1 not in (p, q):
            raise ValueError(
                f"incompatible sizes {p} and {q} at dimension {dim} (counting from the right)"
            )
        merged[dim] = q if p == 1 else p
    return tuple(merged)


def standardize_channels_(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Standardize each channel of ``x[B, C, H, W]`` in place to mean 0 and variance 1
    (biased variance over B, H, W, as BatchNorm in training mode); returns ``x`` itself."""
    by_channel = x.transpose(0, 1)  # (C, B, H, W): a window onto x's memory, no copy
    var, mean = torch.var_mean(by_channel, dim=(1, 2, 3), correction=0, keepdim=True)
    by_channel.sub_(mean).mul_(torch.rsqrt(var + eps))  # the writes go through into x
    return x
