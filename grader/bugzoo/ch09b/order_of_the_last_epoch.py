"""The order fingerprint covers the last epoch's permutation only: two runs that differ in
an earlier epoch share it."""

EXPECT = r"every epoch"
SELECT = "fingerprint"
EDITS = [
    (
        "    return RunResult(losses, init_fingerprint, fingerprint(orders))\n",
        "    return RunResult(losses, init_fingerprint, fingerprint(orders[-1]))\n",
    )
]
