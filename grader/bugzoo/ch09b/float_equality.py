"""compare_runs compares losses with ==, so two runs that both reached nan at the same step
look different."""

EXPECT = r"nan"
SELECT = "compare"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: different initial weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: different data orders")
    for step, (la, lb) in enumerate(zip(a.losses, b.losses)):
        if la != lb:
            differences.append(f"losses: first differ at step {step}")
            break
    else:
        if len(a.losses) != len(b.losses):
            differences.append(f"losses: first differ at step {min(len(a.losses), len(b.losses))}")
    same_start = (
        a.init_fingerprint == b.init_fingerprint and a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(same_start, differences)
