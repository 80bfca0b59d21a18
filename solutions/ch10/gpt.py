"""ch10 — A small GPT you can interrogate: a character-level transformer, its batches,
its training loop, and the diagnostic that tells a real result from a leaked one.
Reference solution."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class CharTokenizer:
    """Characters <-> integer ids; the vocabulary is the sorted set of characters of ``text``."""

    def __init__(self, text: str) -> None:
        self.chars = sorted(set(text))
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        self.itos = dict(enumerate(self.chars))

    def encode(self, text: str) -> list[int]:
        """One id per character of ``text``; KeyError for a character outside the vocabulary."""
        return [self.stoi[c] for c in text]

    def decode(self, ids) -> str:
        """The string of the ids in ``ids`` (a list or a 1-D tensor of ints)."""
        return "".join(self.itos[int(i)] for i in ids)


def get_batch(
    data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the 1-D token tensor ``data``: x (B, T) and y (B, T), both int64,
    where y[b, t] is the token that follows x[b, t] in ``data`` (T = block_size)."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])  # (B, T)
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in starts.tolist()])  # (B, T)
    return x.long(), y.long()  # token ids kept in a narrower integer type come out int64


class TargetCheck(NamedTuple):
    """Result of ``check_targets``: ``ok`` iff y is x shifted one step into the future;
    ``shift`` is the offset s with y[:, t] == x[:, t + s] everywhere (None if no such s)."""

    ok: bool
    shift: int | None
    message: str


def check_targets(x: torch.Tensor, y: torch.Tensor) -> TargetCheck:
    """Is (x, y) a next-token batch? x, y: (B, T) token ids. Finds the offset s (smallest |s|,
    +s before -s on a tie, |s| < max(2, T/2)) with y[:, t] == x[:, t+s] wherever both exist,
    in every row; ok iff s == 1."""
    if x.shape != y.shape or x.dim() != 2:
        return TargetCheck(False, None, f"x {tuple(x.shape)} and y {tuple(y.shape)} differ")
    T = x.shape[1]
    offsets = [s for s in range(-T + 1, T) if abs(s) < max(2, T / 2)]  # some t overlaps
    for s in sorted(offsets, key=lambda s: (abs(s), -s)):  # a tie: the next-token reading
        if s >= 0:
            same = torch.equal(y[:, : T - s], x[:, s:])
        else:
            same = torch.equal(y[:, -s:], x[:, : T + s])
        if same:
            if s == 1:
                return TargetCheck(True, 1, "y[:, t] is x[:, t+1]: next-token targets")
            if s == 0:
                return TargetCheck(False, 0, "y == x: the target is the input itself (no shift)")
            where = "future" if s > 0 else "past"
            return TargetCheck(False, s, f"y[:, t] is x[:, t{s:+d}]: targets from the {where}")
    return TargetCheck(False, None, "y is not a shifted copy of x")


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees only positions <= t.
    (B, T, n_embd) -> (B, T, n_embd), for any T <= block_size."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        assert n_embd % n_head == 0, "n_embd must be divisible by n_head"
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        allowed = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("allowed", allowed, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.qkv(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, Dh)
        k = k.view(B, T, H, C // H).transpose(1, 2)
        v = v.view(B, T, H, C // H).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(C // H)  # (B, H, T, T)
        scores = scores.masked_fill(~self.allowed[:T, :T], float("-inf"))
        out = scores.softmax(dim=-1) @ v  # (B, H, T, Dh)
        out = out.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.proj(out)


class Block(nn.Module):
    """One pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)). (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` Blocks, a final LayerNorm and a linear head.
    forward(idx (B, T) int64, targets (B, T) or None) -> (logits (B, T, vocab), loss or None)."""

    def __init__(
        self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(block_size, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head, block_size) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size)
        self.apply(self._init)

    @staticmethod
    def _init(module: nn.Module) -> None:
        # small weights: at init every token is about equally likely, loss ~ ln(vocab)
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        B, T = idx.shape
        if T > self.block_size:
            raise ValueError(f"sequence of length {T} exceeds block_size {self.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss


@torch.no_grad()
def generate(
    model: nn.Module,
    idx: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Extend idx (B, T) by ``max_new_tokens`` sampled tokens -> (B, T + max_new_tokens).

    Each step feeds the last ``model.block_size`` tokens, takes the logits of the last
    position, divides them by ``temperature`` and samples from their softmax with ``generator``.
    """
    for _ in range(max_new_tokens):
        context = idx[:, -model.block_size :]  # (B, <=block)
        logits, _ = model(context)
        probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)
        nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


class TrainResult(NamedTuple):
    """What ``train_gpt`` returns: the trained model, its tokenizer, the training loss of
    every step, the final validation loss, and the validation tokens (1-D int64)."""

    model: GPT
    tokenizer: CharTokenizer
    train_losses: list[float]
    val_loss: float
    val_data: torch.Tensor


def train_gpt(
    text: str,
    steps: int = 300,
    block_size: int = 32,
    batch_size: int = 16,
    n_layer: int = 2,
    n_head: int = 4,
    n_embd: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    batch_fn: Callable | None = None,
) -> TrainResult:
    """Train a GPT on ``text`` (first 90% train, last 10% validation) with AdamW at ``lr``,
    its other settings PyTorch's defaults (a weight decay of 0.01 included).

    ``batch_fn`` (default ``get_batch``) makes every batch, for training and validation;
    ``val_loss`` is the mean loss over 8 validation batches drawn after training.
    Deterministic for a given seed.
    """
    batch_fn = batch_fn or get_batch
    tokenizer = CharTokenizer(text)
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    n_train = int(0.9 * len(data))
    train_data, val_data = data[:n_train], data[n_train:]
    torch.manual_seed(seed)
    model = GPT(tokenizer.vocab_size, block_size, n_layer, n_head, n_embd)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(steps):
        x, y = batch_fn(train_data, block_size, batch_size, gen)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        val = [model(*batch_fn(val_data, block_size, batch_size, gen))[1].item() for _ in range(8)]
    return TrainResult(model, tokenizer, losses, sum(val) / len(val), val_data)
