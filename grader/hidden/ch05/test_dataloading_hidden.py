"""Hidden tests for ch05: other sizes, seeds, worker counts and edge cases than the public
ones. Messages state the property, not the test."""

import multiprocessing as mp
import random

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from exercises.ch05.test_dataloading import (  # helpers shared with the public twin
    CTX,
    FakeLoader,
    Started,
    epoch,
    forked,
    sleeper,
    too_many_workers,
)
from exercises.ch05.test_dataloading import StartingGate as Gate
from harness.target import chapter_module

dl = chapter_module("ch05", "dataloading")


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
def test_starting_the_iterator_is_part_of_the_wait():
    timing = dl.time_loader(FakeLoader(2, start_s=0.1), lambda b: None, 5)
    assert timing.wait_s >= 0.1, (
        f"a loader that takes 0.1 s to start (as DataLoader workers do) gave wait_s={timing.wait_s:.4f} s: "
        "the wait includes creating the iterator with iter(loader), not only the next() calls"
    )


@pytest.mark.task("ch05.1")
def test_short_loaders_and_no_limit():
    short = dl.time_loader(FakeLoader(3), lambda b: None, 10)
    assert short.batches == 3, (
        f"a 3-batch loader with max_batches=10 must stop at its end, reported {short.batches}"
    )
    everything = FakeLoader(5)
    timing = dl.time_loader(everything, lambda b: None, None)
    assert timing.batches == 5 and everything.pulled == 5, (
        f"max_batches=None must consume the whole loader (5 batches), got {timing.batches}"
    )
    none = dl.time_loader(FakeLoader(4), lambda b: None, 0)
    assert none.batches == 0, f"max_batches=0 must consume nothing, reported {none.batches}"


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
def test_wait_and_compute_are_separated_when_both_are_present():
    # A busy machine can stall one run; a wait that includes consume never passes.
    for _ in range(3):
        timing = dl.time_loader(FakeLoader(5, fetch_s=0.01), sleeper(0.03), 5)
        if timing.wait_s < 0.11:
            break
    assert timing.compute_s >= 0.15 and timing.wait_s >= 0.05, (
        f"5 batches of 10 ms fetch and 30 ms consume gave wait_s={timing.wait_s:.3f}, compute_s={timing.compute_s:.3f}: "
        "both durations are wall-clock time, each summed over every batch"
    )
    assert timing.wait_s < 0.11, (
        f"5 batches of 10 ms fetch and 30 ms consume gave wait_s={timing.wait_s:.3f} s (the fetches sum to 0.05 s): "
        "the wait must not include the time spent consuming"
    )


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
@too_many_workers
def test_sleep_bound_loading_with_six_workers():
    data = dl.SleepyDataset(12, 0.04, dim=3)
    serial = dl.time_loader(DataLoader(data, batch_size=2), lambda b: None, 6)
    assert serial.batches == 6 and serial.wait_s >= 0.48, (
        "without workers, sleep-bound samples must be waited for one after the other (wall-clock time)"
    )
    ratios = []
    for _ in range(5):  # best of five: a busy machine can delay a run
        gate = Gate()
        loader = DataLoader(
            data,
            batch_size=2,
            num_workers=6,
            worker_init_fn=gate,
            persistent_workers=False,
            multiprocessing_context=CTX,
        )
        started = Started(loader, gate, 6)
        try:
            timing = dl.time_loader(started, lambda b: None, 6)
        finally:
            started.close()
        assert timing.batches == 6, "every batch of the worker loader must be counted"
        ratios.append(serial.wait_s / max(timing.wait_s, 1e-9))
        if ratios[-1] >= 2.5:
            break
    assert max(ratios) >= 2.5, (
        f"6 workers on sleep-bound data cut the wait only {max(ratios):.2f}-fold: waiting samples load in parallel"
    )


@pytest.mark.task("ch05.1")
@pytest.mark.timeout(60)
@too_many_workers
def test_stopping_early_leaves_no_worker_running():
    loader = DataLoader(
        dl.SleepyDataset(40, 0.001),
        batch_size=2,
        num_workers=3,
        persistent_workers=False,
        multiprocessing_context=CTX,
    )
    before = set(mp.active_children())
    timing = dl.time_loader(loader, lambda b: None, 2)
    assert timing.batches == 2, f"max_batches=2 must stop after 2 batches, got {timing.batches}"
    alive = set(mp.active_children()) - before
    assert not alive, (
        f"{len(alive)} DataLoader worker processes were still alive after time_loader stopped early: "
        "release the iterator so the loader shuts its workers down"
    )


def reference(seqs):
    T = max(len(s) for s in seqs)
    out = torch.zeros((len(seqs), T, *seqs[0].shape[1:]), dtype=seqs[0].dtype)
    for b, s in enumerate(seqs):
        for t in range(len(s)):
            out[b, t] = s[t]
    return out


@pytest.mark.task("ch05.2")
@pytest.mark.points(2)
def test_pad_collate_with_feature_vectors_and_square_sizes():
    g = torch.Generator().manual_seed(5)
    seqs = [torch.randn(n, 3, generator=g) for n in (1, 3, 2)]  # B == T == F == 3
    padded, lengths, targets = dl.pad_collate([(s, torch.tensor(k)) for k, s in enumerate(seqs)])
    assert tuple(padded.shape) == (3, 3, 3) and torch.equal(padded, reference(seqs)), (
        "sequences of feature vectors (L, F) must be padded to (B, T, F) in batch order, each from position 0 with zeros after"
    )
    assert lengths.tolist() == [1, 3, 2] and lengths.dtype == torch.int64, (
        "lengths must be the original int64 lengths in batch order"
    )
    assert targets.tolist() == [0, 1, 2], "targets must stay in batch order"


@pytest.mark.task("ch05.2")
def test_pad_collate_keeps_token_ids_integer():
    seqs = [torch.tensor([5, 6]), torch.tensor([7, 8, 9, 10]), torch.tensor([11])]
    padded, lengths, targets = dl.pad_collate([(s, 1) for s in seqs])
    assert padded.dtype == torch.int64 and torch.equal(padded, reference(seqs)), (
        "integer token sequences must stay int64 and be padded with 0 after each sequence's end"
    )
    assert lengths.tolist() == [2, 4, 1], "lengths must be recorded before padding"


@pytest.mark.task("ch05.2")
def test_pad_collate_stacks_vector_targets_and_equal_lengths():
    seqs = [torch.ones(3) * k for k in range(4)]
    padded, lengths, targets = dl.pad_collate(
        [(s, torch.tensor([k, -k])) for k, s in enumerate(seqs)]
    )
    assert torch.equal(padded, torch.stack(seqs)), (
        "sequences of equal length need no padding: the result equals stacking them"
    )
    assert lengths.tolist() == [3, 3, 3, 3], (
        "every sequence here has 3 steps, one of them all zeros: a length is the number of steps "
        "before padding, not the number of nonzero entries"
    )
    assert torch.equal(targets, torch.tensor([[k, -k] for k in range(4)])), (
        "tensor targets must be stacked along a new batch dimension, in batch order"
    )


class PyRandomDataset(Dataset):
    """Augmentation from its own random.Random instance; reseed(seed) replaces it."""

    def __init__(self, n):
        self.n, self.rng = n, random.Random(0)

    def reseed(self, seed):
        self.rng = random.Random(seed)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i), self.rng.random(), self.rng.random()], dtype=torch.float64)


def stream(seed, dataset, workers=3, batch_size=2):
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        worker_init_fn=dl.seed_worker,
        generator=torch.Generator().manual_seed(seed),
        persistent_workers=False,
        multiprocessing_context=CTX,
    )
    return epoch(loader)


@pytest.mark.task("ch05.3")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
@too_many_workers
def test_three_workers_all_differ_and_follow_the_generator():
    dl.seed_worker(2)
    data = PyRandomDataset(12)
    first, again, other = stream(21, data), stream(21, data), stream(22, data)
    noise = [b[:, 1:] for b in first[:3]]  # one batch from each worker
    for a in range(3):
        for b in range(a + 1, 3):
            assert not torch.allclose(noise[a], noise[b]), (
                "two DataLoader workers produced identical augmentation: the dataset object each worker "
                "copied must be reseeded per worker (seeding only the global random/NumPy state does not reach it)"
            )
    assert all(torch.equal(x, y) for x, y in zip(first, again)), (
        "equal loader generator seeds must reproduce the augmentation exactly"
    )
    assert not torch.allclose(first[0][:, 1:], other[0][:, 1:]), (
        "different loader generator seeds must give different augmentation; a seed built from "
        "worker_id alone ignores the generator"
    )


@pytest.mark.task("ch05.3")
@pytest.mark.timeout(60)
def test_each_epoch_draws_new_augmentation():
    dl.seed_worker(3)
    loader = DataLoader(
        dl.AugmentedDataset(8, dim=5),
        batch_size=2,
        num_workers=2,
        worker_init_fn=dl.seed_worker,
        generator=torch.Generator().manual_seed(4),
        persistent_workers=False,
        multiprocessing_context=CTX,
    )
    epoch1, epoch2 = epoch(loader), epoch(loader)
    assert not torch.allclose(epoch1[0][:, 1:], epoch2[0][:, 1:]), (
        "two epochs of one loader repeated the same augmentation: each epoch starts fresh workers whose "
        "seeds come from the loader's generator, so the reseed must use that per-worker seed"
    )


@pytest.mark.task("ch05.4")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_make_loader_order_follows_the_seed_and_covers_everything():
    data = dl.AugmentedDataset(12, dim=2)
    a = torch.cat(epoch(forked(dl.make_loader(data, batch_size=3, num_workers=2, seed=1))))
    b = torch.cat(epoch(forked(dl.make_loader(data, batch_size=3, num_workers=2, seed=2))))
    c = torch.cat(epoch(forked(dl.make_loader(data, batch_size=3, num_workers=2, seed=1))))
    assert sorted(a[:, 0].long().tolist()) == list(range(12)), (
        "one epoch must visit every sample exactly once"
    )
    assert torch.equal(a, c), "the same seed must reproduce order and augmentation exactly"
    assert not torch.equal(a[:, 0], b[:, 0]), (
        "different seeds must shuffle differently: the shuffle order must come from a torch.Generator seeded with seed"
    )


@pytest.mark.task("ch05.4")
@pytest.mark.timeout(60)
def test_make_loader_workers_exit_after_the_epoch():
    loader = forked(dl.make_loader(dl.AugmentedDataset(6), batch_size=2, num_workers=2, seed=0))
    before = set(mp.active_children())
    batches = list(loader)
    alive = set(mp.active_children()) - before
    assert len(batches) == 3 and not alive, (
        f"after a full epoch {len(alive)} worker processes were still alive: workers must not be "
        "persistent, so each epoch's workers exit (and the next epoch reseeds fresh ones)"
    )
    assert not torch.allclose(batches[0][:, 1:], batches[1][:, 1:]), (
        "the two workers produced identical augmentation: each worker must reseed its dataset copy"
    )
