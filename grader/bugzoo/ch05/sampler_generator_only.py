"""The seeded generator goes to a RandomSampler but not to the DataLoader: the order follows
the seed, but the workers' base seed is drawn from the global RNG, so the augmentation does not."""

EXPECT = r"augmentation|seeds must follow"
SELECT = "make_loader"

from torch.utils.data import RandomSampler  # noqa: E402


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=RandomSampler(dataset, generator=torch.Generator().manual_seed(seed)),
        num_workers=num_workers,
        worker_init_fn=seed_worker,
    )
