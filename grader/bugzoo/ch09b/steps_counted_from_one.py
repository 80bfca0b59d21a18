"""compare_runs names the first differing step counted from 1 ("step 4" for index 3): the
message points one step past where the runs part."""

EXPECT = r"counted from 0"
SELECT = "compare"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    n = max(len(a.losses), len(b.losses))
    for step in range(n):
        if step >= min(len(a.losses), len(b.losses)):
            differences.append(f"losses: step {step + 1} is in only one run")
            break
        la, lb = a.losses[step], b.losses[step]
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step + 1} ({la!r} vs {lb!r})")
            break
    comparable = a.init_fingerprint == b.init_fingerprint and (
        a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)
