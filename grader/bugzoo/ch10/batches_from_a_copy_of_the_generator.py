"""get_batch draws from a copy of the generator it is given ("to leave the caller's generator
alone"): the caller's generator never moves, so every batch of a run is the same."""

EXPECT = r"continues its stream"
SELECT = "reference_draw"
EDITS = [
    (
        "    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)\n",
        "    if generator is not None:\n"
        "        copied = torch.Generator()\n"
        "        copied.set_state(generator.get_state())\n"
        "        generator = copied\n"
        "    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)\n",
    )
]
