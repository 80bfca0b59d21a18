"""(held-out round 15) num_workers is capped at os.cpu_count() "because more workers than
cores only adds overhead" (and PyTorch warns about it): 8 requested workers become 2 on a
2-core machine, and sleep-bound loading loses its parallel waits."""

EXPECT = r"exactly the num_workers it was given"
SELECT = "without_workers"
TASK = "ch05.4"
EDITS = [
    (
        "        num_workers=num_workers,\n",
        "        num_workers=min(num_workers, os.cpu_count() or 1),\n",
    ),
    ("import random\n", "import os\nimport random\n"),
]
