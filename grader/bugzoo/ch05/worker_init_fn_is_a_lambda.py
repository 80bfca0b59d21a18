"""make_loader wraps seed_worker in a lambda: forked workers copy it from memory and every
Linux run passes, but a spawned worker (macOS, Windows, Linux from Python 3.14) receives the
worker_init_fn pickled, and a lambda does not pickle."""

EXPECT = r"cannot be pickled"
SELECT = "spawned"
EDITS = [
    (
        "        worker_init_fn=seed_worker,  # each worker reseeds its copy of the dataset\n",
        "        worker_init_fn=lambda worker_id: seed_worker(worker_id),\n",
    )
]
