"""The classic recipe: seed random and NumPy's global generator from torch.initial_seed().
Torch already does that for every worker; the dataset's own generator, copied into each
worker by fork, is never touched, so all workers draw the same noise."""

EXPECT = r"copy|copied"
SELECT = "worker or augmentation or make_loader"


def seed_worker(worker_id):
    seed = torch.initial_seed() % 2**32
    np.random.seed(seed)
    random.seed(seed)
