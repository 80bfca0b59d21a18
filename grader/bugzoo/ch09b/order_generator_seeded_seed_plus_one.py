"""make_run seeds its shuffling generator with seed + 1, to keep the order's stream apart
from the initialisation's: reproducible, one generator per run, every seed in its own
orders, but not the generator seeded with the seed that the reading fixes, so every step
feeds other examples."""

EXPECT = r"made once per run"
SELECT = "new_order or reading_describes or config_domain"
EDITS = [
    (
        "    order_gen = torch.Generator().manual_seed(seed)\n",
        "    order_gen = torch.Generator().manual_seed(seed + 1)\n",
    )
]
