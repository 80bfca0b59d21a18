"""A whole module written from the stub, the public tests and the reading alone, without
sight of the reference (to calibrate the similarity report, ``tests/test_similarity.py``):
every definition the student writes, in its own way (the given ones stay the solution's).
It passed every public and hidden test when it was written, and must keep passing them."""

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
    per_head = E // n_heads
    # cut each position's features into H chunks, then bring the head axis before time
    chunks = x.unflatten(-1, (n_heads, per_head))  # [B, T, H, Dh]
    return chunks.permute(0, 2, 1, 3)  # [B, H, T, Dh]


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh], the exact inverse of split_heads."""
    B, H, T, Dh = x.shape
    per_position = x.permute(0, 2, 1, 3)  # [B, T, H, Dh], usually not contiguous
    return per_position.reshape(B, T, H * Dh)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T] on ``device``; True where attention is allowed (key j <= query i), as
    F.scaled_dot_product_attention's boolean attn_mask."""
    pos = torch.arange(T, device=device)
    return pos.unsqueeze(1) >= pos.unsqueeze(0)  # [query, key]


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) over keys: q [..., Tq, D], k [..., Tk, D] -> [..., Tq, Tk].

    ``mask`` is bool, broadcastable to [..., Tq, Tk], True where allowed; disallowed
    weights are exactly 0 and every row with an allowed key sums to 1.
    """
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        else:  # an additive float mask, as SDPA also accepts
            scores = scores + mask
    # hand-written softmax, shifted by the largest *allowed* score of each row
    top = scores.amax(dim=-1, keepdim=True).detach()
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # all-masked rows
    expd = torch.exp(scores - top)
    total = expd.sum(dim=-1, keepdim=True)
    total = torch.where(total > 0, total, torch.ones_like(total))  # such rows stay all 0
    return expd / total


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Scaled dot-product attention: q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv] -> [..., Tq, Dv].

    Same result and mask convention (bool, True = allowed) as F.scaled_dot_product_attention.
    """
    return torch.matmul(attention_weights(q, k, mask), v)


class MultiHeadSelfAttention(nn.Module):
    """Self-attention with ``n_heads`` heads: forward [B, T, E] -> [B, T, E].

    ``qkv`` is nn.Linear(E, 3E) whose output is [q | k | v] along the last axis; ``proj`` is
    nn.Linear(E, E). With ``causal`` no position attends to a later one. After each forward,
    ``last_weights`` holds that call's attention weights [B, H, T, T]. Raises ValueError when
    ``n_heads`` is not a positive divisor of ``embed_dim``.
    """

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        if n_heads < 1 or embed_dim % n_heads != 0:
            raise ValueError(
                f"n_heads={n_heads} must be a positive divisor of embed_dim={embed_dim}"
            )
        self.embed_dim = embed_dim
        self.n_heads = n_heads
        self.causal = causal
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.last_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T, E] -> [B, T, E]; sets ``last_weights`` to [B, H, T, T]."""
        T = x.shape[1]
        packed = self.qkv(x)  # [B, T, 3E]
        q, k, v = (split_heads(part, self.n_heads) for part in packed.split(self.embed_dim, -1))
        allowed = causal_mask(T, device=x.device) if self.causal else None
        w = attention_weights(q, k, allowed)  # [B, H, T, T]
        self.last_weights = w.detach()
        mixed = torch.matmul(w, v)  # [B, H, T, Dh]
        return self.proj(merge_heads(mixed))
