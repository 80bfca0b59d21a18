"""The same values in other memory layouts, for probes that sweep a function's input domain.

A tensor that arrives in a probe (through ``harness.wire``) is contiguous; a student's
function meets other layouts in real code: a transposed matrix, a window of a bigger
tensor, a slice that starts inside its storage, an image stored channels-last. A probe
rebuilds its inputs with ``laid_out(t, layout)`` — same shape, dtype and values — and the
test compares the result with the contiguous answer::

    @probe
    def dists_in(layout, x, y):
        return sh.pairwise_sq_dists(laid_out(x, layout), laid_out(y, layout))
"""

from __future__ import annotations

import torch

LAYOUTS = ("contiguous", "transposed", "strided", "offset", "channels_last")


def laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t``'s values in ``layout``: "transposed" (the last two dims' strides swapped),
    "strided" (every other element of a twice-as-wide buffer), "offset" (starting three
    elements into its storage), "channels_last" (4-D only) or "contiguous". A layout a
    tensor cannot take (too few dims, no elements) gives a contiguous copy."""
    t = t.detach()
    if layout == "transposed" and t.dim() >= 2:
        return t.mT.contiguous().mT
    if layout == "strided" and t.dim() >= 1 and t.numel():
        base = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
        base[..., ::2] = t
        return base[..., ::2]
    if layout == "offset" and t.numel():
        base = torch.zeros(t.numel() + 3, dtype=t.dtype)
        base[3:] = t.reshape(-1)
        return base[3:].view(t.shape)
    if layout == "channels_last" and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if layout not in LAYOUTS:
        raise ValueError(f"course bug: no layout {layout!r} (one of {LAYOUTS})")
    return t.clone()
