"""Outside a worker seed_worker falls back to torch.initial_seed(): torch itself is left
alone, but random and NumPy are reset to torch's seed in the main process."""

EXPECT = r"main process|outside a worker"
SELECT = "worker or augmentation"


def seed_worker(worker_id):
    info = get_worker_info()
    seed = info.seed if info is not None else torch.initial_seed()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if info is not None and callable(getattr(info.dataset, "reseed", None)):
        info.dataset.reseed(seed)
