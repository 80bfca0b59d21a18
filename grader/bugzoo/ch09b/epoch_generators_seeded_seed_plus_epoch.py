"""make_run makes a new shuffling generator every epoch, seeded seed + epoch, to draw "a new
permutation each epoch": reproducible, every epoch in a new order and every seed in others,
but not the one generator per run the reading fixes, so the steps feed other examples and
seed 5's epoch 1 is seed 6's epoch 0 (held-out round 14)."""

EXPECT = r"made once per run"
SELECT = "new_order or reading_describes or config_domain"
EDITS = [
    ("    order_gen = torch.Generator().manual_seed(seed)\n", ""),
    (
        "    for _ in range(config.epochs):\n",
        "    for epoch in range(config.epochs):\n"
        "        order_gen = torch.Generator().manual_seed(seed + epoch)\n",
    ),
]
