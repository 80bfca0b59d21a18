"""A whole module written from the stub, the public tests and the reading alone, without
sight of the reference (to calibrate the similarity report, ``tests/test_similarity.py``):
every definition the student writes, in its own way (the given ones stay the solution's).
It passed every public and hidden test when it was written, and must keep passing them."""

import random  # noqa: F401  (seed_worker needs it)
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info  # noqa: F401


def time_loader(
    loader: Iterable, consume: Callable[[Any], Any], max_batches: int | None = None
) -> LoaderTiming:
    """Pull up to ``max_batches`` batches (all if None) from ``loader``, passing each to ``consume``.

    ``wait_s``: wall-clock seconds spent getting batches, starting the iterator (worker
    start-up) included; ``compute_s``: wall-clock seconds inside ``consume``. Never pulls a
    batch it will not consume, and leaves no worker process running when it returns.
    """
    clock = time.perf_counter
    waiting = working = 0.0
    done = 0

    started = clock()
    batches = iter(loader)  # forks the workers, if any: that is waiting too
    waiting += clock() - started
    try:
        while max_batches is None or done < max_batches:
            asked = clock()
            try:
                batch = next(batches)
            except StopIteration:
                waiting += clock() - asked  # learning that the data ended was waited for
                break
            got = clock()
            waiting += got - asked
            consume(batch)
            working += clock() - got
            done += 1
            del batch
    finally:
        # Stop the workers now instead of leaving them to fetch batches nobody wants.
        stop = getattr(batches, "_shutdown_workers", None)
        if callable(stop):
            stop()
        del batches
    return LoaderTiming(waiting, working, done)


def pad_collate(
    batch: list[tuple[torch.Tensor, Any]],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Collate (sequence (L_i, ...), target) pairs of different lengths, keeping their order.

    Returns ``(padded, lengths, targets)``: padded (B, T, ...) with T = max L_i, each sequence
    at the start of its row and zeros after it, same dtype as the sequences; lengths int64
    (B,); targets stacked to (B, ...).
    """
    sequences = [torch.as_tensor(seq) for seq, _ in batch]
    labels = [torch.as_tensor(label) for _, label in batch]
    sizes = [seq.shape[0] for seq in sequences]  # counted before any padding
    rows, longest = len(sequences), max(sizes)
    out = sequences[0].new_zeros((rows, longest, *sequences[0].shape[1:]))
    for row, (seq, size) in enumerate(zip(sequences, sizes)):
        out[row, :size] = seq
    return out, torch.tensor(sizes, dtype=torch.int64), torch.stack(labels)


def seed_worker(worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: reseed this worker from ``get_worker_info().seed``.

    That seed is the loader generator's base seed plus ``worker_id``. Reseeds Python's
    ``random``, NumPy's global generator and, when the worker's dataset has
    ``reseed(seed)``, the dataset's own generator. In the main process it does nothing.
    """
    info = get_worker_info()
    if info is None:  # main process: leave every generator alone
        return
    worker_seed = int(info.seed)
    random.seed(worker_seed)
    np.random.seed(worker_seed % (1 << 32))  # the legacy generator takes 32-bit seeds
    reseed = getattr(info.dataset, "reseed", None)
    if callable(reseed):
        reseed(worker_seed)  # this worker's own copy of the dataset


def make_loader(dataset: Dataset, batch_size: int, num_workers: int, seed: int) -> DataLoader:
    """A shuffling DataLoader whose order and augmentation are reproducible from ``seed``,
    whose workers draw different augmentation, and whose workers exit after each epoch."""
    order_rng = torch.Generator()
    order_rng.manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        generator=order_rng,  # shuffle order and workers' base seed both come from here
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
