"""train_gpt calls batch_fn without a generator, so batches come from the global random
state: reproducible only because of the global seed, and not the generator the contract names."""

EXPECT = r"generator"
SELECT = "generator_seeded"

EDITS = [
    (
        "x, y = batch_fn(train_data, block_size, batch_size, gen)",
        "x, y = batch_fn(train_data, block_size, batch_size)",
    )
]
