"""ch07 — Attention shapes: splitting heads without scrambling positions, a causal mask
with PyTorch's convention, and self-attention in which no position sees its future.
Read course/ch07.md, repair the TODO(repair) line and replace each NotImplementedError."""

from __future__ import annotations

import torch
from torch import nn


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, T, E] -> [B, H, T, Dh] with Dh = E // H: head h holds dims h*Dh..(h+1)*Dh-1 of every position.

    Raises ValueError when ``n_heads`` is not a positive divisor of E.
    """
    B, T, E = x.shape
    if n_heads < 1 or E % n_heads:
        raise ValueError(f"embedding size {E} is not divisible by n_heads={n_heads}")
    return x.reshape(
        B, n_heads, T, E // n_heads
    )  # TODO(ch07.1, repair) right shape; right numbers?


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh], the exact inverse of split_heads."""
    raise NotImplementedError("ch07.2 merge_heads — see course/ch07.md#splitting-and-merging-heads")


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T] on ``device``; True where attention is allowed (key j <= query i), as
    F.scaled_dot_product_attention's boolean attn_mask."""
    raise NotImplementedError("ch07.3 causal_mask — see course/ch07.md#the-causal-mask")


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) over keys: q [..., Tq, D], k [..., Tk, D] -> [..., Tq, Tk].

    ``mask`` is bool, broadcastable to [..., Tq, Tk], True where allowed; disallowed
    weights are exactly 0 and every row with an allowed key sums to 1.
    """
    raise NotImplementedError("ch07.4 attention_weights — see course/ch07.md#scores-mask-softmax")


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Scaled dot-product attention: q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] -> [..., Tq, Dv].

    Same result and mask convention (bool, True = allowed) as F.scaled_dot_product_attention.
    """
    raise NotImplementedError("ch07.5 attention — see course/ch07.md#scores-mask-softmax")


class MultiHeadSelfAttention(nn.Module):
    """Self-attention with ``n_heads`` heads: forward [B, T, E] -> [B, T, E].

    ``qkv`` is nn.Linear(E, 3E) whose output is [q | k | v] along the last axis; ``proj`` is
    nn.Linear(E, E). With ``causal`` no position attends to a later one. After each forward,
    ``last_weights`` holds that call's attention weights [B, H, T, T]. Raises ValueError when
    ``n_heads`` is not a positive divisor of ``embed_dim``.
    """

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        raise NotImplementedError(
            "ch07.6 MultiHeadSelfAttention — see course/ch07.md#multi-head-self-attention"
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T, E] -> [B, T, E]; sets ``last_weights`` to [B, H, T, T]."""
        raise NotImplementedError(
            "ch07.6 MultiHeadSelfAttention — see course/ch07.md#multi-head-self-attention"
        )
