"""ch07 — Attention shapes: splitting heads without scrambling positions, a causal mask
with PyTorch's convention, and self-attention in which no position sees its future.
Reference solution."""

from __future__ import annotations

import math

import torch
from torch import nn


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, T, E] -> [B, H, T, Dh] with Dh = E // H: head h holds dims h*Dh..(h+1)*Dh-1 of every position.

    Raises ValueError when ``n_heads`` is not a positive divisor of E.
    """
    B, T, E = x.shape
    if n_heads < 1 or E % n_heads:
        raise ValueError(f"embedding size {E} is not divisible by n_heads={n_heads}")
    return x.view(B, T, n_heads, E // n_heads).transpose(1, 2)  # (B, T, H, Dh) -> (B, H, T, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh], the exact inverse of split_heads."""
    B, H, T, Dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, H, Dh) -> (B, T, E)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T] on ``device``; True where attention is allowed (key j <= query i), as
    F.scaled_dot_product_attention's boolean attn_mask."""
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) over keys: q [..., Tq, D], k [..., Tk, D] -> [..., Tq, Tk].

    ``mask`` is bool, broadcastable to [..., Tq, Tk], True where allowed; disallowed
    weights are exactly 0 and every row with an allowed key sums to 1.
    """
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(dim=-1)


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Scaled dot-product attention: q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] -> [..., Tq, Dv].

    Same result and mask convention (bool, True = allowed) as F.scaled_dot_product_attention.
    """
    return attention_weights(q, k, mask) @ v  # (..., Tq, Tk) @ (..., Tk, Dv)


class MultiHeadSelfAttention(nn.Module):
    """Self-attention with ``n_heads`` heads: forward [B, T, E] -> [B, T, E].

    ``qkv`` is nn.Linear(E, 3E) whose output is [q | k | v] along the last axis; ``proj`` is
    nn.Linear(E, E). With ``causal`` no position attends to a later one. After each forward,
    ``last_weights`` holds that call's attention weights [B, H, T, T]. Raises ValueError when
    ``n_heads`` is not a positive divisor of ``embed_dim``.
    """

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        if n_heads < 1 or embed_dim % n_heads:
            raise ValueError(f"embed_dim {embed_dim} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.causal = causal
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.last_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T, E] -> [B, T, E]; sets ``last_weights`` to [B, H, T, T]."""
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)  # 3 x (B, T, E)
        q, k, v = (split_heads(t, self.n_heads) for t in (q, k, v))  # (B, H, T, Dh)
        mask = causal_mask(T, device=x.device) if self.causal else None
        weights = attention_weights(q, k, mask)  # (B, H, T, T)
        self.last_weights = weights.detach()
        return self.proj(merge_heads(weights @ v))  # (B, H, T, Dh) -> (B, T, E)
