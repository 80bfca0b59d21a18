"""compare_runs walks the two loss lists with zip: a run that stopped early looks identical."""

EXPECT = r"length|only one run"
SELECT = "compare"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    for step, (la, lb) in enumerate(zip(a.losses, b.losses)):
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step} ({la!r} vs {lb!r})")
            break
    comparable = (
        a.init_fingerprint == b.init_fingerprint and a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)
