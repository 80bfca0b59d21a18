"""make_loader gives the shuffle and the workers' base seed two generators, each seeded with
``seed``: order and augmentation are reproducible and follow the seed, but the shuffle no
longer draws after the base seed from the loader's one generator, so the order is not the
one DataLoader(shuffle=True, generator=Generator().manual_seed(seed)) makes."""

EXPECT = r"order"
TASK = "ch05.4"
SELECT = "make_loader"

from torch.utils.data import RandomSampler  # noqa: E402


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=RandomSampler(dataset, generator=torch.Generator().manual_seed(seed)),
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
