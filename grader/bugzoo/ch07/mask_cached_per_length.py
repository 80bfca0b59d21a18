"""Caches one mask per (T, device) and hands the same tensor to every caller: a caller that
edits its mask (masked_fill_) edits everyone's."""

EXPECT = r"earlier call also returned"
SELECT = "causal_mask"

import functools  # noqa: E402


@functools.cache
def _cached_mask(T, device):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def causal_mask(T, device=None):
    return _cached_mask(T, None if device is None else str(device))
