"""Accumulates the "sum" reduction in float64 for accuracy: the values are right, and
"none" and "mean" keep the scores' dtype, but every summed loss comes back float64."""

EXPECT = r"'sum'\).*returned a torch\.float64 loss for torch\.(b?float16|float32) scores"
SELECT = "random_and_integer"
TASK = "ch06a.3"
EDITS = [("        return losses.sum()\n", "        return losses.sum(dtype=torch.float64)\n")]
