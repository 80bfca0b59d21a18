"""generator=torch.manual_seed(seed): manual_seed returns the *global* generator, so every
loader shares it and each epoch's order depends on what else drew from it since."""

EXPECT = r"torch\.Generator"
SELECT = "make_loader"


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        generator=torch.manual_seed(seed),
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
