"""Half a repair: the global RNG is seeded and the workers reseed their datasets, but the
DataLoader has no generator of its own. The order depends on whatever else drew from the
global RNG before the epoch started (another loader's epoch, a model's initialisation)."""

EXPECT = r"torch\.Generator"
SELECT = "make_loader"


def make_loader(dataset, batch_size, num_workers, seed):
    torch.manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        worker_init_fn=seed_worker,
    )
