"""compare_runs compares losses with math.isclose: a difference in the last bits, the first
sign of a nondeterministic kernel, is reported as no difference."""

EXPECT = r"bits|bitwise"
SELECT = "compare"


def _same_float(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b)
