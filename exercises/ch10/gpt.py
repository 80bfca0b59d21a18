"""ch10 — A small GPT you can interrogate: a character-level transformer, its batches,
its training loop, and the diagnostic that tells a real result from a leaked one.
Read course/ch10.md, then replace each NotImplementedError and repair get_batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F  # noqa: F401 - you will need it


class CharTokenizer:
    """Characters <-> integer ids; the vocabulary is the sorted set of characters of ``text``."""

    def __init__(self, text: str) -> None:
        raise NotImplementedError("ch10.1 CharTokenizer — see course/ch10.md#characters-become-ids")

    def encode(self, text: str) -> list[int]:
        """One id per character of ``text``; KeyError for a character outside the vocabulary."""
        raise NotImplementedError("ch10.1 CharTokenizer — see course/ch10.md#characters-become-ids")

    def decode(self, ids) -> str:
        """The string of the ids in ``ids`` (a list or a 1-D tensor of ints)."""
        raise NotImplementedError("ch10.1 CharTokenizer — see course/ch10.md#characters-become-ids")


def get_batch(
    data: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the 1-D token tensor ``data``: x (B, T) and y (B, T), both int64,
    where y[b, t] is the token that follows x[b, t] in ``data`` (T = block_size)."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])  # (B, T)
    y = torch.stack([data[i : i + block_size] for i in starts.tolist()])  # TODO(ch10.2, repair)
    return x, y


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
    raise NotImplementedError("ch10.3 check_targets — see course/ch10.md#checking-the-targets")


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees only positions <= t.
    (B, T, n_embd) -> (B, T, n_embd), for any T <= block_size."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        raise NotImplementedError(
            "ch10.4 CausalSelfAttention — see course/ch10.md#causal-self-attention"
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(
            "ch10.4 CausalSelfAttention — see course/ch10.md#causal-self-attention"
        )


class Block(nn.Module):
    """One pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x)). (B, T, C) -> (B, T, C)."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        raise NotImplementedError("ch10.5 Block — see course/ch10.md#the-block")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("ch10.5 Block — see course/ch10.md#the-block")


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` Blocks, a final LayerNorm and a linear head.
    forward(idx (B, T) int64, targets (B, T) or None) -> (logits (B, T, vocab), loss or None)."""

    def __init__(
        self, vocab_size: int, block_size: int, n_layer: int, n_head: int, n_embd: int
    ) -> None:
        super().__init__()
        raise NotImplementedError("ch10.6 GPT — see course/ch10.md#the-model")

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError("ch10.6 GPT — see course/ch10.md#the-model")


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
    raise NotImplementedError("ch10.7 generate — see course/ch10.md#generating-text")


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
    raise NotImplementedError("ch10.8 train_gpt — see course/ch10.md#training")
