"""Public tests for ch05 — run with `pytest exercises/ch05` (add `--impl solutions` to see
the reference pass). Tests that start DataLoader workers carry a timeout; no test asserts
on wall time except where the effect is many-fold (sleep-bound loading with workers)."""

import multiprocessing as mp
import time

import pytest
import torch
from torch.utils.data import DataLoader

from harness.target import chapter_module

dl = chapter_module("ch05", "dataloading")

# Workers are forked where fork exists: the module under test is loaded under a private
# name, which a spawned worker could not import.
CTX = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
too_many_workers = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def forked(loader):
    """The loader ``make_loader`` built, set to fork its workers: the module under test has a
    private name that a spawned or forkserver worker (Python 3.14's default) cannot import."""
    if CTX is not None and getattr(loader, "num_workers", 0) > 0:
        loader.multiprocessing_context = CTX
    return loader


def epoch(loader):
    """All batches of one pass over ``loader``; its workers are shut down even if a worker fails."""
    it = iter(loader)
    try:
        return list(it)
    finally:
        getattr(it, "_shutdown_workers", lambda: None)()


class FakeLoader:
    """An iterable of ``n`` batches: starting it sleeps ``start_s``, each batch ``fetch_s``.
    Counts how many batches were pulled."""

    def __init__(self, n, fetch_s=0.0, start_s=0.0):
        self.n, self.fetch_s, self.start_s = n, fetch_s, start_s
        self.pulled = 0

    def __iter__(self):
        time.sleep(self.start_s)
        return self._batches()

    def _batches(self):
        for k in range(self.n):
            time.sleep(self.fetch_s)
            self.pulled += 1
            yield torch.full((2,), float(k))


def sleeper(seconds, seen=None):
    def consume(batch):
        if seen is not None:
            seen.append(batch)
        time.sleep(seconds)

    return consume


class StartingGate:
    """worker_init_fn that warms each worker up, reports it ready and holds it until ``go``:
    the timed part then sees the steady state, not process start-up (paid once per epoch)."""

    def __init__(self):
        self.ready, self.go = CTX.Semaphore(0), CTX.Event()

    def __call__(self, worker_id):
        from multiprocessing.reduction import ForkingPickler

        ForkingPickler.dumps(torch.zeros(4))  # first tensor hand-off costs tens of ms
        self.ready.release()
        self.go.wait(30)


class Started:
    """An iterable over a DataLoader whose workers are already running and waiting at the gate."""

    def __init__(self, loader, gate, workers):
        self.gate, self.it = gate, iter(loader)
        for _ in range(workers):
            assert gate.ready.acquire(timeout=30), "DataLoader workers did not start within 30 s"

    def __iter__(self):
        self.gate.go.set()
        it, self.it = self.it, None  # time_loader holds the only reference from here on
        return it

    def close(self):
        """Release and stop the workers if time_loader never started iterating."""
        self.gate.go.set()
        if self.it is not None:
            self.it._shutdown_workers()
            self.it = None


def timed_with_workers(dataset, batch_size, workers):
    gate = StartingGate()
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        num_workers=workers,
        worker_init_fn=gate,
        persistent_workers=False,
        multiprocessing_context=CTX,
    )
    started = Started(loader, gate, workers)
    try:
        return dl.time_loader(started, lambda b: None, len(loader))
    finally:
        started.close()


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
def test_waiting_for_slow_batches_is_wait_time():
    # A busy machine can stall one run; compute that includes the wait never passes.
    for _ in range(3):
        timing = dl.time_loader(FakeLoader(4, fetch_s=0.03), lambda b: None, 10)
        if timing.compute_s < 0.5 * timing.wait_s:
            break
    assert timing.batches == 4, f"time_loader on a 4-batch loader reported {timing.batches} batches"
    assert timing.wait_s >= 0.12, (
        f"4 batches that each take 30 ms to arrive gave wait_s={timing.wait_s:.4f} s, expected >= 0.12 s: "
        "time the wall clock (time.perf_counter) around next(iterator) — a CPU-time clock does not see a loader that sleeps"
    )
    assert timing.compute_s < 0.5 * timing.wait_s, (
        f"consume does nothing, yet compute_s={timing.compute_s:.4f} s vs wait_s={timing.wait_s:.4f} s: "
        "compute_s must only cover the time inside consume(batch)"
    )


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
def test_consumer_work_is_compute_time_not_wait():
    # A busy machine can stall one run; a wait that includes consume never passes.
    for _ in range(3):
        seen = []
        timing = dl.time_loader(FakeLoader(4), sleeper(0.04, seen), 10)
        if timing.wait_s < 0.08:
            break
    assert len(seen) == 4 and all(
        torch.equal(b, torch.full((2,), float(k))) for k, b in enumerate(seen)
    ), "consume should be called once with each batch, in the loader's order"
    assert timing.compute_s >= 0.16, (
        f"consume sleeps 40 ms per batch (4 batches), but compute_s={timing.compute_s:.4f} s: "
        "compute_s is the wall-clock time spent inside consume(batch)"
    )
    assert timing.wait_s < 0.08, (
        f"the loader delivers instantly, but wait_s={timing.wait_s:.4f} s with compute_s={timing.compute_s:.4f} s: "
        "the wait for a batch ends when next() returns — do not let the consumer's work run into it"
    )


@pytest.mark.task("ch05.1")
def test_stops_after_max_batches_without_pulling_more():
    loader, seen = FakeLoader(10), []
    timing = dl.time_loader(loader, sleeper(0.0, seen), 3)
    assert timing.batches == 3 and len(seen) == 3, (
        f"time_loader(..., max_batches=3) on a 10-batch loader reported {timing.batches} batches "
        f"and called consume {len(seen)} times; expected 3 and 3"
    )
    assert loader.pulled == 3, (
        f"with max_batches=3 the loader was asked for {loader.pulled} batches: check the max_batches "
        "limit before calling next(), or you wait for a batch nobody uses"
    )


@pytest.mark.task("ch05.1")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
@too_many_workers
def test_workers_cut_the_wait_on_sleep_bound_data():
    """Sleep-bound samples (16 x 30 ms, like slow disk reads): 8 workers wait in parallel."""
    data = dl.SleepyDataset(16, 0.03)
    serial = dl.time_loader(DataLoader(data, batch_size=2, num_workers=0), lambda b: None, None)
    assert serial.batches == 8, (
        f"16 samples in batches of 2 should be 8 batches, got {serial.batches}"
    )
    assert serial.wait_s >= 0.48, (
        f"without workers 16 samples that sleep 30 ms each gave wait_s={serial.wait_s:.3f} s, expected >= 0.48 s: "
        "time the wall clock around fetching each batch"
    )
    before = set(mp.active_children())
    ratios = []
    for _ in range(5):  # best of five: a busy machine can delay a run
        parallel = timed_with_workers(data, 2, 8)
        assert parallel.batches == 8, (
            f"with 8 workers time_loader saw {parallel.batches} batches, expected 8"
        )
        ratios.append(serial.wait_s / max(parallel.wait_s, 1e-9))
        if ratios[-1] >= 2.5:
            break
    assert max(ratios) >= 2.5, (
        f"8 workers on sleep-bound data cut the wait only {max(ratios):.2f}-fold (serial {serial.wait_s:.3f} s): "
        "samples that sleep can be fetched in parallel, so the wait should fall several-fold"
    )
    alive = set(mp.active_children()) - before
    assert not alive, (
        f"{len(alive)} worker processes still running after time_loader returned; "
        "drop the iterator (its last reference) so the DataLoader shuts its workers down"
    )


@pytest.mark.task("ch05.1")
@pytest.mark.timeout(60)
def test_report_cpu_bound_loading(capsys):
    """CPU-bound samples: on 2 cores, workers help at most 2x. Reported, not asserted."""
    data = dl.BusyDataset(16, work=50_000)
    serial = dl.time_loader(DataLoader(data, batch_size=2), lambda b: None, None)
    parallel = dl.time_loader(
        DataLoader(
            data, batch_size=2, num_workers=2, persistent_workers=False, multiprocessing_context=CTX
        ),
        lambda b: None,
        None,
    )
    with capsys.disabled():
        print(
            f"\n[ch05 report] CPU-bound loading, 16 samples: wait {serial.wait_s:.3f} s with 0 workers, "
            f"{parallel.wait_s:.3f} s with 2 workers (start-up included) on {mp.cpu_count()} cores"
        )
    assert serial.batches == parallel.batches == 8, (
        f"16 samples in batches of 2 are 8 batches; time_loader saw {serial.batches} (0 workers) "
        f"and {parallel.batches} (2 workers)"
    )
    assert serial.wait_s > 0 and parallel.wait_s > 0, "wait_s must be a positive duration"


def padded_reference(seqs):
    """Slow obvious padding: row b holds sequence b from position 0, zeros after."""
    T = max(len(s) for s in seqs)
    out = torch.zeros((len(seqs), T, *seqs[0].shape[1:]), dtype=seqs[0].dtype)
    for b, s in enumerate(seqs):
        for t in range(len(s)):
            out[b, t] = s[t]
    return out


@pytest.mark.task("ch05.2")
@pytest.mark.points(2)
def test_pad_collate_pads_each_row_from_its_start():
    g = torch.Generator().manual_seed(1)
    lengths = [4, 2, 3, 1]  # B == T == 4: a time-major (T, B) result has the same shape
    seqs = [torch.randn(n, generator=g) for n in lengths]
    seqs[1][-1] = 0.0  # a real zero (silence, a zero feature) is data, not padding
    batch = [(s, k % 2) for k, s in enumerate(seqs)]
    padded, lens, targets = dl.pad_collate(batch)
    expected = padded_reference(seqs)
    assert tuple(padded.shape) == (4, 4), (
        f"pad_collate on 4 sequences (longest 4) returned shape {tuple(padded.shape)}, expected (4, 4) = (B, T)"
    )
    assert torch.equal(padded, expected), (
        f"pad_collate(...)[0] is\n{padded}\nexpected\n{expected}\n"
        "row b must be sequence b from position 0 followed by zeros (batch first: (B, T), not time-major (T, B))"
    )
    assert lens.dtype == torch.int64 and lens.tolist() == lengths, (
        f"lengths came back as {lens.tolist()} ({lens.dtype}), expected {lengths} as int64 "
        "(sequence 1 ends in a real 0.0): record each sequence's length before padding, "
        "not the rows' nonzero entries or their padded length"
    )
    assert torch.equal(targets, torch.tensor([0, 1, 0, 1])), (
        f"targets came back as {targets.tolist()}, expected [0, 1, 0, 1]: keep the batch order "
        "(sorting the sequences by length without moving the targets with them mislabels them)"
    )


@pytest.mark.task("ch05.2")
def test_pad_collate_lets_a_dataloader_batch_sequences():
    data = dl.VarLenDataset(10, max_len=6, features=3, seed=2)
    padded, lens, targets = next(iter(DataLoader(data, batch_size=5, collate_fn=dl.pad_collate)))
    seqs = [data[i][0] for i in range(5)]
    assert torch.equal(padded, padded_reference(seqs)), (
        "pad_collate as a DataLoader collate_fn: sequences of (L, 3) features should come back as (B, T, 3), "
        "each in its own row from position 0, zero-padded"
    )
    assert lens.tolist() == [len(s) for s in seqs], (
        f"lengths {lens.tolist()} do not match the sequences"
    )
    assert targets.tolist() == [int(data[i][1]) for i in range(5)], (
        "targets are not in the batch order"
    )


def augmentation_stream(seed, workers=2, n=16, batch_size=4, dataset=None):
    """Every batch of one epoch of a loader that uses seed_worker, as a list."""
    data = dataset if dataset is not None else dl.AugmentedDataset(n)
    loader = DataLoader(
        data,
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
def test_each_worker_draws_different_augmentation():
    dl.seed_worker(0)  # outside a worker it must simply return
    batches = augmentation_stream(seed=3)
    noise0, noise1 = (
        batches[0][:, 1:],
        batches[1][:, 1:],
    )  # batch 0 from worker 0, batch 1 from worker 1
    assert not torch.allclose(noise0, noise1), (
        "with 2 workers, batch 0 (worker 0) and batch 1 (worker 1) carry the same augmentation noise: "
        "each forked worker starts from a copy of the dataset's generator — reseed the worker's "
        "dataset from get_worker_info().seed"
    )


@pytest.mark.task("ch05.3")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
def test_augmentation_follows_the_loader_generator():
    dl.seed_worker(1)  # outside a worker it must simply return
    first, again, other = (augmentation_stream(seed=s) for s in (7, 7, 8))
    assert all(torch.equal(a, b) for a, b in zip(first, again)), (
        "two loaders whose generators are both seeded with 7 produced different augmentation: the "
        "worker's seed must come from get_worker_info().seed (derived from the loader's generator), "
        "not from the clock, the process id or fresh OS entropy"
    )
    assert not torch.allclose(first[0][:, 1:], other[0][:, 1:]), (
        "loaders seeded with 7 and with 8 produced the same augmentation: a seed built from worker_id "
        "alone ignores the loader's generator, so every run (and every epoch) repeats the same noise"
    )


@pytest.mark.task("ch05.4")
@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_make_loader_is_reproducible_and_workers_differ():
    data = dl.AugmentedDataset(16)
    # Both loaders are built before either is used, as a script builds its train and val loaders.
    loaders = [forked(dl.make_loader(data, batch_size=4, num_workers=2, seed=11)) for _ in range(2)]
    first, again = epoch(loaders[0]), epoch(loaders[1])
    order = [b[:, 0].long().tolist() for b in first]
    assert order == [b[:, 0].long().tolist() for b in again], (
        f"make_loader(seed=11) twice shuffled into different orders ({order[0]}... vs "
        f"{again[0][:, 0].long().tolist()}...): give the DataLoader a torch.Generator seeded with `seed`"
    )
    assert not torch.allclose(first[0][:, 1:], first[1][:, 1:]), (
        "make_loader(num_workers=2): batches from worker 0 and worker 1 carry the same augmentation noise — "
        "pass worker_init_fn=seed_worker so each worker reseeds its copy of the dataset"
    )
    assert all(torch.equal(a, b) for a, b in zip(first, again)), (
        "make_loader(seed=11) twice gave the same order but different augmentation: the workers' seeds "
        "must follow the loader's generator"
    )
