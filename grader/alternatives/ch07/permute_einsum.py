"""Heads are cut and glued with ``unflatten``/``permute``/``flatten``, the mask compares position
indices, and the softmax is hand-written (shifted by the largest *allowed* score, a row with no
allowed key giving zeros as F.scaled_dot_product_attention does) instead of masked_fill + softmax.
The numbers are the contract's: head h gets dims h*Dh..(h+1)*Dh-1, masked weights are exactly 0,
rows with an allowed key sum to 1, and ``qkv``/``proj``/``last_weights`` are as specified.
"""

import torch
from torch import nn


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """[B, T, E] -> [B, H, T, Dh]; ValueError when n_heads does not divide E."""
    embed = x.shape[-1]
    if n_heads <= 0 or embed % n_heads != 0:
        raise ValueError(f"n_heads={n_heads} does not divide the embedding size {embed}")
    per_head = x.unflatten(-1, (n_heads, embed // n_heads))  # [B, T, H, Dh]
    return per_head.permute(0, 2, 1, 3)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[B, H, T, Dh] -> [B, T, H*Dh]."""
    return x.permute(0, 2, 1, 3).flatten(start_dim=2)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Bool [T, T], True where key index <= query index."""
    pos = torch.arange(T, device=device)
    return pos.unsqueeze(1) >= pos.unsqueeze(0)


def attention_weights(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """softmax over keys of q k^T / sqrt(D), masked keys weighted exactly 0."""
    scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if mask is None:
        allowed = torch.ones_like(scores, dtype=torch.bool)
    else:
        allowed = mask.expand_as(scores)
    neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    kept = torch.where(allowed, scores, neg_inf)
    top = kept.amax(dim=-1, keepdim=True).detach()  # a constant shift, no gradient needed
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # rows with no key
    expd = torch.where(allowed, torch.exp(kept - top), torch.zeros_like(scores))
    total = expd.sum(dim=-1, keepdim=True)
    return expd / torch.where(total > 0, total, torch.ones_like(total))


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """[..., Tq, D], [..., Tk, D], [..., Tk, Dv] -> [..., Tq, Dv]."""
    return torch.einsum("...qk,...kd->...qd", attention_weights(q, k, mask), v)


class MultiHeadSelfAttention(nn.Module):
    """Fused qkv projection viewed as [B, T, 3, H, Dh] and permuted, instead of chunk + split."""

    def __init__(self, embed_dim: int, n_heads: int, causal: bool = True) -> None:
        if n_heads <= 0 or embed_dim % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} does not divide embed_dim={embed_dim}")
        super().__init__()
        self.heads = n_heads
        self.head_dim = embed_dim // n_heads
        self.is_causal = causal
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.last_weights = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        packed = self.qkv(x).view(b, t, 3, self.heads, self.head_dim)
        q, k, v = packed.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, T, Dh]
        mask = causal_mask(t, device=x.device) if self.is_causal else None
        w = attention_weights(q, k, mask)
        self.last_weights = w.detach()
        return self.proj(merge_heads(w @ v))
