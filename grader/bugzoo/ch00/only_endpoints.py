"""The curve is judged by its two ends only, so a zigzag that ends low is 'converging'
and one that ends near its start is 'slow'."""

EXPECT = r"rises|up and down"


def classify_curve(losses):
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    return "converging" if last <= 0.1 * first else "slow"
