"""Multi-head self-attention runs one head at a time on feature slices of q, k and v and stacks
the per-head weights, masking uses ``torch.where`` before and after the softmax (a row with no
allowed key becomes zeros, not NaN), and the split is reshape + permute + contiguous.
Mathematically the same function as the reference: same heads, same mask, same weights.
"""

import math

import torch
from torch import nn


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, T, E] -> [B, H, T, Dh]."""
    B, T, E = x.shape
    if n_heads <= 0 or E % n_heads:
        raise ValueError(f"embedding size {E} cannot be split into {n_heads} heads")
    return x.reshape(B, T, n_heads, E // n_heads).permute(0, 2, 1, 3).contiguous()


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh]."""
    B, H, T, Dh = x.shape
    return x.permute(0, 2, 1, 3).contiguous().view(B, T, H * Dh)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T] lower triangle, made on ``device``."""
    return torch.tril(torch.ones(T, T, device=device)).bool()


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Masked scores set to -inf, softmax, then masked weights forced to exactly 0."""
    scores = q.matmul(k.mT) * (1.0 / math.sqrt(q.size(-1)))
    if mask is None:
        return scores.softmax(-1)
    scores = torch.where(mask, scores, float("-inf"))
    return torch.where(mask, scores.softmax(-1), 0.0)


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """weights @ v."""
    return torch.matmul(attention_weights(q, k, mask), v)


class MultiHeadSelfAttention(nn.Module):
    """A loop over heads instead of one batched [B, H, T, T] product."""

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        if n_heads <= 0 or embed_dim % n_heads:
            raise ValueError(f"embed_dim={embed_dim} is not a multiple of n_heads={n_heads}")
        self.n_heads = n_heads
        self.causal = causal
        self.qkv = nn.Linear(embed_dim, embed_dim * 3)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.last_weights = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        E = x.shape[-1]
        dh = E // self.n_heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = causal_mask(x.shape[1], device=x.device) if self.causal else None
        outs, weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * dh, (h + 1) * dh)
            w = attention_weights(q[..., cols], k[..., cols], mask)  # [B, T, T]
            weights.append(w)
            outs.append(w @ v[..., cols])  # [B, T, Dh]
        self.last_weights = torch.stack(weights, dim=1).detach()
        return self.proj(torch.cat(outs, dim=-1))
