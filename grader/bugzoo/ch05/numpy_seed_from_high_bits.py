"""The 64-bit worker seed is squeezed into NumPy's 32 bits by keeping its high bits: workers
differ only in the low bits, so every worker gets the same NumPy seed."""

EXPECT = r"NumPy"
SELECT = "global"


def seed_worker(worker_id):
    info = get_worker_info()
    if info is None:
        return
    random.seed(info.seed)
    np.random.seed(info.seed >> 32)
    if callable(getattr(info.dataset, "reseed", None)):
        info.dataset.reseed(info.seed)
