"""Other formulas for the same results: ``broadcast_shape`` walks both shapes from the right
with ``zip_longest`` and words its error differently; ``pairwise_sq_dists`` expands
|x|^2 + |y|^2 - 2 x.y (clamped at 0), which the reading accepts; ``batch_linear`` is one
``addmm``; ``standardize_channels_`` normalizes out of place (variance as the mean of the
centred squares) and copies the result back into ``x``'s own memory with ``copy_``, which
still changes ``x`` in place."""

from itertools import zip_longest

import torch


def broadcast_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The shape that broadcasting ``a`` with ``b`` produces, as a tuple of ints.

    Shapes are aligned from the right; two sizes agree when equal or when one is 1.
    Raises ``ValueError`` naming the dimension (and both sizes) where they disagree.
    """
    left = [int(size) for size in a]
    right = [int(size) for size in b]
    result_reversed: list[int] = []
    pairs = zip_longest(reversed(left), reversed(right), fillvalue=1)
    for offset, (p, q) in enumerate(pairs, start=1):
        if p == 1:
            result_reversed.append(q)
        elif q in (1, p):
            result_reversed.append(p)
        else:
            raise ValueError(
                f"shapes {tuple(left)} and {tuple(right)} do not broadcast: at dim -{offset} "
                f"the sizes are {p} and {q}, and neither is 1"
            )
    return tuple(reversed(result_reversed))


def pairwise_sq_dists(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between every row of ``x[N, D]`` and every row of
    ``y[M, D]``: returns ``[N, M]`` with ``out[i, j] = ||x[i] - y[j]||**2``."""
    x_norms = (x * x).sum(dim=1).unsqueeze(1)  # [N, 1]
    y_norms = (y * y).sum(dim=1).unsqueeze(0)  # [1, M]
    cross = x @ y.transpose(0, 1)  # [N, M]
    return (x_norms + y_norms - 2 * cross).clamp_min(0)  # rounding can dip just below 0


def batch_linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``nn.Linear``'s computation: ``x[B, I]``, weight ``W[O, I]`` (one row per output),
    bias ``b[O]``; returns ``[B, O]`` with ``out[k, o] = x[k] . W[o] + b[o]``."""
    return torch.addmm(b, x, W.t())  # b [O] is broadcast over the B rows


def standardize_channels_(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Standardize each channel of ``x[B, C, H, W]`` in place to mean 0 and variance 1
    (biased variance over B, H, W, as BatchNorm in training mode); returns ``x`` itself."""
    over = (0, 2, 3)  # every axis but the channel
    centred = x - x.mean(dim=over, keepdim=True)  # a new tensor, x is still untouched
    inv_std = centred.square().mean(dim=over, keepdim=True).add(eps).rsqrt()
    x.copy_(centred * inv_std)  # written element by element into the memory x already has
    return x
