"""Classifies a float32 copy of the curve: the caller's list is untouched, but values beyond
float32's range become inf (above 3.4e38) or 0 (below 1.4e-45), so such a curve's name
depends on its scale."""

EXPECT = r"float32"
SELECT = "ratio_only"


def classify_curve(losses):
    vals = torch.tensor(losses, dtype=torch.float32)
    first, last = vals[0].item(), vals[-1].item()
    if not math.isfinite(last) or last > 2 * first:
        return "diverging"
    steps = (vals[1:] - vals[:-1]).tolist()
    ups = sum(d > 0 for d in steps)
    if steps and ups >= len(steps) / 3 and last > 0.5 * first:
        return "oscillating"
    return "converging" if last <= 0.1 * first else "slow"
