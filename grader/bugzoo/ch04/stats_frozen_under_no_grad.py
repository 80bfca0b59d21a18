"""The running statistics are updated only while grad mode is on: a training-mode forward
under torch.no_grad() (a warm-up pass over data, a statistics recalibration) normalises
with the batch but leaves running_mean / running_var where they were. nn.BatchNorm1d
updates them in training mode whatever the grad mode; self.training decides, not grad
mode. (Held-out round 14.)"""

EXPECT = r"whatever the grad mode"
SELECT = "running_norm"
TASK = "ch04.4"

EDITS = [
    (
        "            with torch.no_grad():  # statistics are bookkeeping, not part of the graph\n",
        "            if torch.is_grad_enabled():  # under no_grad we are only evaluating\n"
        "              with torch.no_grad():\n",
    )
]
