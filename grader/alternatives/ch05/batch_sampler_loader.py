"""``make_loader`` builds the shuffle explicitly: one ``torch.Generator`` seeded with ``seed``
drives a ``RandomSampler`` inside a ``BatchSampler`` and is also the loader's ``generator``
(so the workers' base seed follows it), with non-persistent workers left at the default.
``seed_worker`` feeds all 64 bits of the worker seed to NumPy as a two-word seed and checks
for ``reseed`` with ``hasattr``; ``time_loader`` uses ``next`` with a sentinel and does not
start an iterator when no batch is wanted. Same batches, same seeding sources, same timing."""

import math

from torch.utils.data import BatchSampler, RandomSampler


def time_loader(
    loader: Iterable, consume: Callable[[Any], Any], max_batches: int | None = None
) -> LoaderTiming:
    if max_batches is not None and max_batches <= 0:
        return LoaderTiming(0.0, 0.0, 0)  # nothing to wait for: do not even start workers
    finished = object()
    waited: list[float] = []
    worked: list[float] = []
    t_ask = time.perf_counter()
    batches_iter = iter(loader)
    try:
        while max_batches is None or len(worked) < max_batches:
            batch = next(batches_iter, finished)
            t_got = time.perf_counter()
            if batch is finished:  # the end of the data, not a batch
                break
            waited.append(t_got - t_ask)
            consume(batch)
            t_ask = time.perf_counter()
            worked.append(t_ask - t_got)
    finally:
        batches_iter = None  # drop the only reference: the workers are shut down
    return LoaderTiming(wait_s=math.fsum(waited), compute_s=math.fsum(worked), batches=len(worked))


def seed_worker(worker_id: int) -> None:
    info = get_worker_info()
    if info is None:
        return  # main process: leave every generator alone
    seed = int(info.seed)
    random.seed(seed)
    np.random.seed([seed & 0xFFFF_FFFF, seed >> 32])  # the whole 64-bit seed, as two words
    dataset = info.dataset
    if hasattr(dataset, "reseed"):
        dataset.reseed(seed)


def make_loader(dataset: Dataset, batch_size: int, num_workers: int, seed: int) -> DataLoader:
    generator = torch.Generator()
    generator.manual_seed(seed)
    batches = BatchSampler(
        RandomSampler(dataset, generator=generator), batch_size=batch_size, drop_last=False
    )
    return DataLoader(
        dataset,
        batch_sampler=batches,
        num_workers=num_workers,
        generator=generator,
        worker_init_fn=seed_worker,
    )
