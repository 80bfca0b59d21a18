"""seed_worker reasons that a lone worker has nobody to differ from and returns early when
num_workers == 1: that worker keeps the dataset generator it copied from the main process,
so every seed and every epoch replays the same augmentation."""

EXPECT = r"one worker|single worker"
SELECT = "worker or augmentation or make_loader"
TASK = "ch05.3"


def seed_worker(worker_id):
    info = get_worker_info()
    if info is None or info.num_workers == 1:
        return
    seed = info.seed
    random.seed(seed)
    np.random.seed(seed % 2**32)
    reseed = getattr(info.dataset, "reseed", None)
    if callable(reseed):
        reseed(seed)
