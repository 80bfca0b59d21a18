"""GPT-2 style internals: the tokenizer keeps an alphabet string and one lookup dict, batches are
gathered with one advanced index, attention uses separate query/key/value/output Linears and
``F.scaled_dot_product_attention`` with the sliced boolean mask, the block and model use other
attribute names (``wte``, ``wpe``, ``h``, ``lm_head``) and PyTorch's default initialisation, and
the loss is taken with the class axis second. Same maths, same contract.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharTokenizer:
    """Characters <-> integer ids; the vocabulary is the sorted set of characters of ``text``."""

    def __init__(self, text: str) -> None:
        self.alphabet = "".join(sorted(set(text)))
        self.vocab_size = len(self.alphabet)
        self._id_of = {ch: pos for pos, ch in enumerate(self.alphabet)}

    def encode(self, text: str) -> list[int]:
        """One id per character of ``text``; KeyError for a character outside the vocabulary."""
        return list(map(self._id_of.__getitem__, text))

    def decode(self, ids) -> str:
        """The string of the ids in ``ids`` (a list or a 1-D tensor of ints)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        pieces = []
        for value in values:
            if not 0 <= int(value) < self.vocab_size:
                raise KeyError(value)
            pieces.append(self.alphabet[int(value)])
        return "".join(pieces)


def get_batch(data, block_size, batch_size, generator=None):
    """Random windows of the 1-D token tensor ``data``: x (B, T) and y (B, T), both int64,
    where y[b, t] is the token that follows x[b, t] in ``data`` (T = block_size)."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    positions = starts[:, None] + torch.arange(block_size)[None, :]  # (B, T)
    return data[positions].long(), data[positions + 1].long()


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees only positions <= t.
    (B, T, n_embd) -> (B, T, n_embd), for any T <= block_size."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        if n_embd % n_head:
            raise ValueError(f"n_embd {n_embd} is not a multiple of n_head {n_head}")
        self.heads = n_head
        self.query = nn.Linear(n_embd, n_embd)
        self.key = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.out = nn.Linear(n_embd, n_embd)
        causal = torch.ones(block_size, block_size, dtype=torch.bool).tril()
        self.register_buffer("causal", causal, persistent=False)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        B, T, C = t.shape
        return t.view(B, T, self.heads, C // self.heads).transpose(1, 2)  # (B, H, T, Dh)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self._heads(self.query(x)), self._heads(self.key(x)), self._heads(self.value(x))
        mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=self.causal[:T, :T])
        return self.out(mixed.transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    """One pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)). (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        self.norm_before_attn = nn.LayerNorm(n_embd)
        self.self_attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.norm_before_ff = nn.LayerNorm(n_embd)
        self.widen = nn.Linear(n_embd, 4 * n_embd)
        self.narrow = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.norm_before_attn(x))
        return x + self.narrow(F.gelu(self.widen(self.norm_before_ff(x))))


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` Blocks, a final LayerNorm and a linear head.
    forward(idx (B, T) int64, targets (B, T) or None) -> (logits (B, T, vocab), loss or None)."""

    def __init__(
        self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_final = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"{T} positions given, but only {self.block_size} are embedded")
        stream = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))[None]
        for layer in self.h:
            stream = layer(stream)
        logits = self.lm_head(self.ln_final(stream))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.transpose(1, 2), targets)
