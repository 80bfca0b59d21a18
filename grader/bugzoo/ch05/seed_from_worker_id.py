"""Each worker reseeds its dataset with its worker_id: workers differ, but every loader and
every epoch repeats the same augmentation whatever the generator says."""

EXPECT = r"worker_id|generator"
SELECT = "worker or augmentation or make_loader"


def seed_worker(worker_id):
    info = get_worker_info()
    if info is not None and hasattr(info.dataset, "reseed"):
        info.dataset.reseed(worker_id)
