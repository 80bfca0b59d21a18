"""ch05 — DataLoader performance: is the training step slow, or is it waiting for data?
Read course/ch05.md, then replace each NotImplementedError and repair make_loader."""

from __future__ import annotations

import random  # noqa: F401  (seed_worker needs it)
import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info  # noqa: F401


class LoaderTiming(NamedTuple):
    """Seconds spent waiting for batches, seconds spent inside ``consume``, batches consumed."""

    wait_s: float
    compute_s: float
    batches: int


# ---------------------------------------------------------------------------------------
# Synthetic datasets (not exercises: complete in the stub too). They live in this module
# so that DataLoader workers can find them whatever the start method.
# ---------------------------------------------------------------------------------------


class SleepyDataset(Dataset):
    """``n`` samples whose loading only *waits*, like disk or network reads: each
    ``__getitem__(i)`` sleeps ``sleep_s`` seconds and returns a float32 tensor (dim,) of i."""

    def __init__(self, n: int, sleep_s: float, dim: int = 4) -> None:
        self.n, self.sleep_s, self.dim = n, sleep_s, dim

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        time.sleep(self.sleep_s)
        return torch.full((self.dim,), float(i))


class BusyDataset(Dataset):
    """``n`` samples whose loading keeps a CPU core busy, like decoding an image: each
    ``__getitem__(i)`` runs ``work`` rounds of Python arithmetic and returns a float32 tensor (dim,)."""

    def __init__(self, n: int, work: int = 20_000, dim: int = 4) -> None:
        self.n, self.work, self.dim = n, work, dim

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        acc = i
        for k in range(self.work):
            acc = (acc * 31 + k) % 1_000_003
        return torch.full((self.dim,), float(acc))


class AugmentedDataset(Dataset):
    """Sample i is a float32 tensor (1 + dim,): the index i, then ``dim`` noise values (a stand-in
    for a random augmentation) drawn from the dataset's *own* generator ``self.rng``.
    ``reseed(seed)`` replaces that generator."""

    def __init__(self, n: int, dim: int = 4, seed: int = 0) -> None:
        self.n, self.dim = n, dim
        self.rng = np.random.default_rng(seed)

    def reseed(self, seed: int) -> None:
        """Start this dataset's augmentation stream afresh from ``seed``."""
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        noise = torch.as_tensor(self.rng.normal(0.0, 1.0, size=self.dim), dtype=torch.float32)
        return torch.cat([torch.tensor([float(i)]), noise])  # (1 + dim,)


class VarLenDataset(Dataset):
    """``n`` sequences of lengths in [1, max_len]: item i is (float32 tensor (L_i, features),
    int64 class label), all drawn once from ``seed``."""

    def __init__(self, n: int, max_len: int = 8, features: int = 3, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(1, max_len + 1, (n,), generator=g).tolist()
        self.items = [
            (torch.randn(length, features, generator=g), torch.randint(0, 2, (), generator=g))
            for length in lengths
        ]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.items[i]


# ---------------------------------------------------------------------------------------
# Exercises
# ---------------------------------------------------------------------------------------


def time_loader(
    loader: Iterable, consume: Callable[[Any], Any], max_batches: int | None = None
) -> LoaderTiming:
    """Pull up to ``max_batches`` batches (all if None) from ``loader``, passing each to ``consume``.

    ``wait_s``: wall-clock seconds spent getting batches, starting the iterator (worker
    start-up) included; ``compute_s``: wall-clock seconds inside ``consume``. Never pulls a
    batch it will not consume, and leaves no worker process running when it returns.
    """
    raise NotImplementedError("ch05.1 time_loader — see course/ch05.md#waiting-or-working")


def pad_collate(
    batch: list[tuple[torch.Tensor, Any]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collate (sequence (L_i, ...), target) pairs of different lengths, keeping their order.

    Returns ``(padded, lengths, targets)``: padded (B, T, ...) with T = max L_i, each sequence
    at the start of its row and zeros after it, same dtype and device as the sequences;
    lengths int64 (B,); targets stacked to (B, ...).
    """
    raise NotImplementedError(
        "ch05.2 pad_collate — see course/ch05.md#batches-of-different-lengths"
    )


def seed_worker(worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: reseed this worker from ``get_worker_info().seed``.

    That seed is the loader generator's base seed plus ``worker_id``. Reseeds Python's
    ``random``, NumPy's global generator and, when the worker's dataset has
    ``reseed(seed)``, the dataset's own generator. In the main process it does nothing.
    """
    raise NotImplementedError("ch05.3 seed_worker — see course/ch05.md#randomness-in-workers")


def make_loader(dataset: Dataset, batch_size: int, num_workers: int, seed: int) -> DataLoader:
    """A shuffling DataLoader whose order and augmentation are reproducible from ``seed``,
    whose workers draw different augmentation, and whose workers exit after each epoch."""
    # TODO(ch05.4, repair): every worker starts from a copy of the same dataset generator,
    # and the shuffle order comes from the global RNG, not from `seed`.
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers)
