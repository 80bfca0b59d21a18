"""compare_runs treats each step a run lacks as a diverged loss (inf): a run that ended on an
inf step looks identical to one that stopped a step earlier."""

EXPECT = r"only one run"
SELECT = "compare"
TASK = "ch09b.3"


def compare_runs(a, b):
    differences = []
    if a.init_fingerprint != b.init_fingerprint:
        differences.append("init_fingerprint: the runs start from different weights")
    if a.order_fingerprint != b.order_fingerprint:
        differences.append("order_fingerprint: the runs visit the data in different orders")
    n = max(len(a.losses), len(b.losses))
    la_all = list(a.losses) + [math.inf] * (n - len(a.losses))
    lb_all = list(b.losses) + [math.inf] * (n - len(b.losses))
    for step, (la, lb) in enumerate(zip(la_all, lb_all)):
        if not _same_float(la, lb):
            differences.append(f"losses: first differ at step {step} ({la!r} vs {lb!r})")
            break
    comparable = (
        a.init_fingerprint == b.init_fingerprint and a.order_fingerprint == b.order_fingerprint
    )
    return Comparison(comparable, differences)
