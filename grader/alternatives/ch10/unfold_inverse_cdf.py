"""The tokenizer finds ids by bisection in the sorted alphabet; batches are rows of
``data.unfold`` windows of length T + 1; attention packs k, q, v in that order, scores with
``einsum`` and masks through a boolean "future" buffer; the block writes its MLP as one
Sequential with tanh-GELU; the GPT learns its positions as a raw Parameter, chains its blocks in an
``nn.Sequential`` and takes the loss as NLL of log-softmax; ``generate`` samples by inverting the
CDF into a preallocated output. All stay inside the contract.
"""

import bisect
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharTokenizer:
    """Characters <-> integer ids; the vocabulary is the sorted set of characters of ``text``."""

    def __init__(self, text: str) -> None:
        self.symbols = sorted(set(text))
        self.vocab_size = len(self.symbols)

    def encode(self, text: str) -> list[int]:
        """One id per character of ``text``; KeyError for a character outside the vocabulary."""
        ids = []
        for ch in text:
            at = bisect.bisect_left(self.symbols, ch)
            if at == self.vocab_size or self.symbols[at] != ch:
                raise KeyError(ch)
            ids.append(at)
        return ids

    def decode(self, ids) -> str:
        """The string of the ids in ``ids`` (a list or a 1-D tensor of ints)."""
        out = []
        for i in ids:
            i = int(i)
            if i < 0 or i >= self.vocab_size:
                raise KeyError(i)
            out.append(self.symbols[i])
        return "".join(out)


def get_batch(data, block_size, batch_size, generator=None):
    """Random windows of the 1-D token tensor ``data``: x (B, T) and y (B, T), both int64,
    where y[b, t] is the token that follows x[b, t] in ``data`` (T = block_size)."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    windows = data.unfold(0, block_size + 1, 1)[starts].to(torch.int64)  # (B, T + 1)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees only positions <= t.
    (B, T, n_embd) -> (B, T, n_embd), for any T <= block_size."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        assert n_embd % n_head == 0, "n_embd must be divisible by n_head"
        self.n_head = n_head
        self.kqv = nn.Linear(n_embd, 3 * n_embd)  # columns: keys, then queries, then values
        self.merge = nn.Linear(n_embd, n_embd)
        ahead = torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1)
        self.register_buffer("ahead", ahead, persistent=False)  # True where t' > t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        H, D = self.n_head, C // self.n_head
        k, q, v = (part.view(B, T, H, D).transpose(1, 2) for part in self.kqv(x).chunk(3, dim=-1))
        scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(D)
        scores = scores.masked_fill(self.ahead[:T, :T], float("-inf"))
        mixed = torch.einsum("bhts,bhsd->bhtd", F.softmax(scores, dim=-1), v)
        return self.merge(mixed.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """One pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)). (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        self.pre_attn = nn.LayerNorm(n_embd)
        self.attention = CausalSelfAttention(n_embd, n_head, block_size)
        self.pre_mlp = nn.LayerNorm(n_embd)
        self.feed_forward = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * n_embd, n_embd),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.attention(self.pre_attn(x))
        x = h + x
        return self.feed_forward(self.pre_mlp(x)) + x


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` Blocks, a final LayerNorm and a linear head.
    forward(idx (B, T) int64, targets (B, T) or None) -> (logits (B, T, vocab), loss or None)."""

    def __init__(
        self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.token_table = nn.Embedding(vocab_size, n_embd)
        self.position_table = nn.Parameter(0.02 * torch.randn(block_size, n_embd))
        self.layers = nn.Sequential(*(Block(n_embd, n_head, block_size) for _ in range(n_layer)))
        self.final_norm = nn.LayerNorm(n_embd)
        self.readout = nn.Linear(n_embd, vocab_size)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if getattr(module, "bias", None) is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        if T > self.block_size:
            raise ValueError(f"got {T} tokens; the model has {self.block_size} positions")
        stream = self.token_table(idx) + self.position_table[:T]
        logits = self.readout(self.final_norm(self.layers(stream)))
        if targets is None:
            return logits, None
        log_probs = F.log_softmax(logits, dim=-1).reshape(B * T, -1)
        return logits, F.nll_loss(log_probs, targets.reshape(B * T))


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, generator=None):
    """Extend idx (B, T) by ``max_new_tokens`` sampled tokens -> (B, T + max_new_tokens).

    Each step feeds the last ``model.block_size`` tokens, takes the logits of the last
    position, divides them by ``temperature`` and samples from their softmax with ``generator``.
    """
    B, T = idx.shape
    out = torch.empty(B, T + max_new_tokens, dtype=idx.dtype, device=idx.device)
    out[:, :T] = idx
    for end in range(T, T + max_new_tokens):
        logits, _ = model(out[:, max(0, end - model.block_size) : end])
        probs = torch.softmax(logits[:, -1, :] / temperature, dim=-1)
        cdf = torch.cumsum(probs.double(), dim=-1)
        u = torch.rand(B, 1, generator=generator, dtype=torch.float64, device=cdf.device)
        u = u * cdf[:, -1:]  # against the actual total, so rounding never runs off the end
        picked = torch.searchsorted(cdf, u, right=True).clamp_(max=probs.shape[-1] - 1)
        out[:, end] = picked[:, 0].to(idx.dtype)
    return out
