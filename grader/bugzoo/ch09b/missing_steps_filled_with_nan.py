"""compare_runs pads the shorter run with nan (zip_longest): since nan equals nan bitwise, a
run that ended on a nan step looks identical to one that stopped a step earlier
(held-out round 15)."""

import itertools

EXPECT = r"only one run"
SELECT = "compare"
TASK = "ch09b.3"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    pairs = itertools.zip_longest(a.losses, b.losses, fillvalue=float("nan"))
    for step, (la, lb) in enumerate(pairs):
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step} ({la!r} vs {lb!r})")
            break
    comparable = (
        a.init_fingerprint == b.init_fingerprint and a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)
