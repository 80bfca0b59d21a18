"""make_loader shuffles with a NumPy generator seeded with ``seed`` (a fresh permutation every
epoch) and gives the DataLoader a torch.Generator seeded with ``seed`` only for the workers'
seeds: reproducible, seed-dependent and reshuffled each epoch, but the order is not the one
the seeded torch.Generator of the DataLoader makes."""

EXPECT = r"order"
TASK = "ch05.4"
SELECT = "make_loader"


class _NumpyShuffle(torch.utils.data.Sampler):
    def __init__(self, n, seed):
        self.n, self.rng = n, np.random.default_rng(seed)

    def __len__(self):
        return self.n

    def __iter__(self):
        return iter(self.rng.permutation(self.n).tolist())


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=_NumpyShuffle(len(dataset), seed),
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=seed_worker,
        persistent_workers=False,
    )
