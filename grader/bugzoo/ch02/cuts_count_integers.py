"""Every result without requires_grad counts, integers and bools included, so argmax,
comparisons and shapes are reported as cuts."""

EXPECT = r"bool|integer"
SELECT = "find_graph_cuts"


def _carries_values(obj):
    return isinstance(obj, (Tensor, float, int, list, tuple, np.ndarray))


def _shape_only(name):
    return False
