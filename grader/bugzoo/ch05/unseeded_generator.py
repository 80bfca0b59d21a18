"""The loader gets its own torch.Generator(), but it is never seeded with `seed`: every seed
gives the same order and the same augmentation."""

EXPECT = r"never reaches|seeded with .seed."
SELECT = "make_loader"


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        generator=torch.Generator(),
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
