"""compare_runs calls two runs comparable when their losses match, ignoring where they started."""

EXPECT = r"comparable"
SELECT = "compare"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: different initial weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: different data orders")
    for step, (la, lb) in enumerate(zip(a.losses, b.losses)):
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step}")
            break
    return Comparison(not any(d.startswith("losses") for d in differences), differences)
