"""make_loader passes drop_last=True ("equal batches are tidier"): when the dataset size is
not a multiple of batch_size, the samples of the short last batch are never seen in that epoch."""

EXPECT = r"last|every sample"
SELECT = "make_loader"
TASK = "ch05.4"

EDITS = [
    (
        "        persistent_workers=False,\n    )",
        "        persistent_workers=False,\n        drop_last=True,\n    )",
    )
]
