"""Heads are a contiguous copy (``stack`` of ``chunk``s, merged with ``cat``), the mask negates the
strict upper triangle, masking is an additive -inf bias, ``attention`` calls
F.scaled_dot_product_attention (the function the contract defines it by), and ``last_weights``
keeps the weights attached to the graph rather than detached.
All of this is the same function and the same [B, H, T, T] weights the contract describes.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, T, E] -> [B, H, T, Dh] as a fresh contiguous tensor."""
    if n_heads < 1 or x.size(-1) % n_heads:
        raise ValueError(f"cannot split {x.size(-1)} features into {n_heads} equal heads")
    return torch.stack(x.chunk(n_heads, dim=-1), dim=1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh]: the heads side by side along the features."""
    return torch.cat(x.unbind(dim=1), dim=-1)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T]: everything except the strict upper triangle (future keys)."""
    future = torch.ones((T, T), dtype=torch.bool, device=device).triu(diagonal=1)
    return future.logical_not()


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Scores plus a bias that is 0 where allowed and -inf where not, then softmax."""
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(k.size(-1))
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device)
        scores = scores + bias.masked_fill(mask.logical_not(), float("-inf"))
    return torch.softmax(scores, dim=-1)


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """PyTorch's own fused attention, boolean mask True = allowed. The mask is first
    broadcast to [..., Tq, Tk]: a key-padding mask [Tk] is legal, but the kernels index
    the mask's last two axes."""
    if mask is not None:
        lead = torch.broadcast_shapes(q.shape[:-2], mask.shape[:-2])
        mask = mask.expand(*lead, q.shape[-2], k.shape[-2])
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class MultiHeadSelfAttention(nn.Module):
    """Splits qkv with ``split`` and keeps ``last_weights`` attached to the graph."""

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        super().__init__()
        if n_heads < 1 or embed_dim % n_heads:
            raise ValueError(f"{n_heads} heads do not divide embed_dim={embed_dim}")
        self.embed_dim = embed_dim
        self.n_heads = n_heads
        self.causal = causal
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.last_weights = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = self.qkv(x).split(self.embed_dim, dim=-1)
        q, k, v = (split_heads(p, self.n_heads) for p in parts)
        mask = causal_mask(x.size(1), device=x.device) if self.causal else None
        self.last_weights = attention_weights(q, k, mask)
        return self.proj(merge_heads(self.last_weights @ v))
