"""A sampler that builds a fresh generator from the seed at every epoch: each epoch repeats
the first one's order exactly."""

EXPECT = r"new order each epoch|same order"
SELECT = "make_loader"


class _SameOrder(torch.utils.data.Sampler):
    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        return iter(torch.randperm(self.n, generator=g).tolist())

    def __len__(self):
        return self.n


def make_loader(dataset, batch_size, num_workers, seed):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=_SameOrder(len(dataset), seed),
        num_workers=num_workers,
        generator=torch.Generator().manual_seed(seed),
        worker_init_fn=seed_worker,
    )
