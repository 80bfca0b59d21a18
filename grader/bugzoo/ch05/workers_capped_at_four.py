"""More than four workers "rarely pay off", so make_loader quietly caps num_workers at 4:
whatever the machine, a caller who asks for 8 workers for sleep-bound data gets 4."""

EXPECT = r"exactly the num_workers it was given"
SELECT = "without_workers"
TASK = "ch05.4"
EDITS = [("        num_workers=num_workers,\n", "        num_workers=min(num_workers, 4),\n")]
