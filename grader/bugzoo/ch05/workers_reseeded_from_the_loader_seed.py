"""make_loader reseeds each worker from its own `seed` argument plus worker_id instead of
get_worker_info().seed: runs are reproducible and workers differ, but every epoch's fresh
workers start from the same seeds and replay the first epoch's augmentation."""

import functools  # noqa: E402

EXPECT = r"epoch"
SELECT = "make_loader"
TASK = "ch05.4"


def _reseed_from(seed, worker_id):
    info = get_worker_info()
    random.seed(seed + worker_id)
    np.random.seed((seed + worker_id) % 2**32)
    if callable(getattr(info.dataset, "reseed", None)):
        info.dataset.reseed(seed + worker_id)


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=functools.partial(_reseed_from, seed),
        persistent_workers=False,
    )
