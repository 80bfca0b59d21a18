"""Validation scores consecutive windows of val_data with its own next-token targets and
never calls batch_fn: a broken batch function then fools training but not validation."""

EXPECT = r"validation"
SELECT = "copy_targets or split"

EDITS = [
    (
        """\
        val = [model(*batch_fn(val_data, block_size, batch_size, gen))[1].item() for _ in range(8)]
""",
        """\
        n = (len(val_data) - 1) // block_size
        xv = val_data[: n * block_size].view(n, block_size)
        yv = val_data[1 : n * block_size + 1].view(n, block_size)
        val = [model(xv, yv)[1].item()]
""",
    )
]
