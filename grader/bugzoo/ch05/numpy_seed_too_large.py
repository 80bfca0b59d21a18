"""get_worker_info().seed is a 64-bit number, but np.random.seed only takes seeds below
2**32: the worker raises as soon as it starts."""

EXPECT = r"2\*\*32"
SELECT = "worker or augmentation or make_loader"


def seed_worker(worker_id):
    info = get_worker_info()
    if info is None:
        return
    random.seed(info.seed)
    np.random.seed(info.seed)
    if hasattr(info.dataset, "reseed"):
        info.dataset.reseed(info.seed)
