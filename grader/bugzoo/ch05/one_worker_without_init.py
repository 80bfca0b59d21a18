"""make_loader installs seed_worker only when there are several workers to keep apart: a
single worker keeps the dataset generator it copied, so each epoch repeats the last one's
augmentation."""

EXPECT = r"epoch|one worker|single worker"
SELECT = "make_loader"
TASK = "ch05.4"

EDITS = [
    (
        "worker_init_fn=seed_worker,  # each worker reseeds its copy of the dataset",
        "worker_init_fn=seed_worker if num_workers > 1 else None,",
    )
]
