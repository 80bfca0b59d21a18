"""Persistent workers are kept between epochs: the processes stay alive after the epoch."""

EXPECT = r"persistent"
SELECT = "make_loader"


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=seed_worker,
        persistent_workers=num_workers > 0,
    )
