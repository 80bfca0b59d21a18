"""Without a generator, draws from a fresh torch.Generator(): every call starts from the
same default seed, so every batch of a run is the same."""

EXPECT = r"global generator|fresh"
SELECT = "get_batch"
EDITS = [
    (
        "    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)\n",
        "    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator or torch.Generator())\n",
    )
]
