"""ch04 — Recursive composition: what belongs to the model. Registration decides what
parameters(), state_dict(), .to() and the optimizer can see. Read course/ch04.md, repair Encoder, then replace
each NotImplementedError."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn


def xor_data(n: int, seed: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The book's XOR data (X_train, y_train, X_val, y_val): X float32 (N, 2), y int64 (N,).

    Seeds the *global* generator with ``seed`` (as the book does) and draws randn(n, 2) then
    randperm(n); the first 80% of the permutation is training data. A model built right
    after this call is therefore reproducible too.
    """
    torch.manual_seed(seed)
    X = torch.randn(n, 2)  # (n, 2)
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).long()  # (n,)
    perm = torch.randperm(n)
    k = int(0.8 * n)
    return X[perm[:k]], y[perm[:k]], X[perm[k:]], y[perm[k:]]


class Block(nn.Module):
    """relu(Linear(width, width)(x)): (N, width) -> (N, width)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(self.linear(x))


class Encoder(nn.Module):
    """relu(stem(x)) followed by ``depth`` Blocks: (N, d_in) -> (N, hidden).

    Every block must be registered, so that parameters(), state_dict() and .to() see it.
    """

    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.stem = nn.Linear(d_in, hidden)
        self.blocks = [Block(hidden) for _ in range(depth)]  # TODO(ch04.1, repair)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.stem(x))  # (N, hidden)
        for block in self.blocks:
            h = block(h)  # (N, hidden)
        return h


class Classifier(nn.Module):
    """An Encoder and a linear head: (N, d_in) -> logits (N, n_classes)."""

    def __init__(self, d_in: int = 2, hidden: int = 16, depth: int = 3, n_classes: int = 2) -> None:
        super().__init__()
        self.encoder = Encoder(d_in, hidden, depth)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.encoder(x))  # (N, n_classes)


# Attributes every nn.Module keeps in its __dict__ (its own registries, hooks, flags).
_MODULE_INTERNALS = frozenset(vars(nn.Module()))


def unregistered_state(model: nn.Module) -> list[str]:
    """Dotted paths of attributes holding modules or tensors that PyTorch did not register.

    Searches ``model`` and its registered submodules for plain attributes that are (or are
    lists, tuples or dicts holding) modules or tensors, e.g. ``encoder.blocks[0]``,
    ``norm.mean``, ``heads['a']`` (dict keys as repr). Objects registered somewhere in the
    model are not reported; an unregistered object is reported once, not searched inside.
    """
    raise NotImplementedError(
        "ch04.2 unregistered_state — see course/ch04.md#what-did-pytorch-not-register"
    )


class Coverage(NamedTuple):
    """``missing``: names of trainable parameters no param group holds;
    ``foreign``: how many distinct tensors the optimizer holds that are not the model's."""

    missing: list[str]
    foreign: int


def optimizer_coverage(model: nn.Module, optimizer: torch.optim.Optimizer) -> Coverage:
    """Compare the model's parameters that require grad with the optimizer's param groups,
    by object identity (an equal-valued copy is a different tensor). Returns a Coverage."""
    raise NotImplementedError(
        "ch04.3 optimizer_coverage — see course/ch04.md#what-does-the-optimizer-own"
    )


class RunningNorm(nn.Module):
    """Per-feature normalisation of (N, num_features) inputs with running statistics.

    Training mode: normalise with the batch mean and biased variance, and update the buffers
    ``running_mean`` / ``running_var`` (unbiased batch variance) as
    running = (1 - momentum) * running + momentum * batch. Eval mode: use the buffers.
    The statistics are buffers: moved by .to(), saved in state_dict(), never trained.
    Numerically the same as ``nn.BatchNorm1d(num_features, affine=False)``; like it, a
    training batch of fewer than two rows (no variance to estimate) raises ValueError.
    """

    def __init__(self, num_features: int, momentum: float = 0.1, eps: float = 1e-5) -> None:
        raise NotImplementedError(
            "ch04.4 RunningNorm — see course/ch04.md#state-that-is-not-trained-buffers"
        )

    def forward(self, x: Tensor) -> Tensor:
        raise NotImplementedError(
            "ch04.4 RunningNorm — see course/ch04.md#state-that-is-not-trained-buffers"
        )


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    **extra: Any,
) -> Path:
    """Write the model's state_dict, the optimizer's state_dict (if given) and ``extra``
    (plain Python values such as epoch=3) to ``path`` with torch.save; returns the path."""
    raise NotImplementedError("ch04.5 save_checkpoint — see course/ch04.md#a-checkpoint-round-trip")


def load_checkpoint(
    path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer | None = None
) -> dict[str, Any]:
    """Restore a ``save_checkpoint`` file into ``model`` (strictly: every key must match, or
    RuntimeError) and into ``optimizer`` if given; returns the saved ``extra`` values."""
    raise NotImplementedError("ch04.5 load_checkpoint — see course/ch04.md#a-checkpoint-round-trip")
