"""compare_runs skips a step where either loss is nan: a run that diverged looks identical
to one that did not."""

EXPECT = r"nan"
SELECT = "compare"


def _same_float(a: float, b: float) -> bool:
    return math.isnan(a) or math.isnan(b) or a == b
