"""Only tensor results are checked, so a value that leaves torch (.item(), .tolist(),
float()) is never reported."""

EXPECT = r"item|python number"
SELECT = "find_graph_cuts"


def _carries_values(obj):
    return isinstance(obj, Tensor) and obj.is_floating_point()
