"""compare_runs adds one 'losses' entry for every step that differs, instead of one entry
naming the first."""

EXPECT = r"one entry|exactly one"
SELECT = "compare"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    for step in range(max(len(a.losses), len(b.losses))):
        if step >= min(len(a.losses), len(b.losses)) or not _same_float(
            a.losses[step], b.losses[step]
        ):
            differences.append(f"losses: differ at step {step}")
    comparable = a.init_fingerprint == b.init_fingerprint and (
        a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)
