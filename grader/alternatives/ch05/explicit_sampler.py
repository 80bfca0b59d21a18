"""make_loader builds the RandomSampler itself over the seeded generator and hands the same
generator to the DataLoader (for the workers' base seed): the draws are the ones shuffle=True
makes, in the same order, so order and augmentation follow the seed."""

from torch.utils.data import RandomSampler  # noqa: E402


def make_loader(dataset, batch_size, num_workers, seed):
    g = torch.Generator().manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=RandomSampler(dataset, generator=g),
        num_workers=num_workers,
        generator=g,
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
