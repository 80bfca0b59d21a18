"""Outside a worker seed_worker falls back to seeding everything from worker_id: calling it
in the main process silently resets random, NumPy and torch."""

EXPECT = r"main process|outside a worker"
SELECT = "worker or augmentation"


def seed_worker(worker_id):
    info = get_worker_info()
    seed = info.seed if info is not None else worker_id
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if info is not None and callable(getattr(info.dataset, "reseed", None)):
        info.dataset.reseed(seed)
