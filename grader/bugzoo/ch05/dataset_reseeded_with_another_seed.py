"""Reseeds the worker's dataset with its seed plus worker_id once more: still different per
worker and reproducible, but not the worker's seed the contract names."""

EXPECT = r"reseed the worker's copy|its worker seed"
SELECT = "reseeded_with"
EDITS = [
    (
        "        reseed(seed)  # the copy of the dataset this worker owns\n",
        "        reseed(seed + worker_id)\n",
    )
]
