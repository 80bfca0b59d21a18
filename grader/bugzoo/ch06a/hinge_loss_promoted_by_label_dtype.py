"""Multiplies the labels into the scores without bringing them to the scores' dtype
(held-out round 12): type promotion lets float64 labels turn float32 scores' loss into
float64, and float32 labels a half-precision loss into float32."""

EXPECT = r"returned a torch\.\w+ loss for torch\.\w+ scores.*type promotion"
SELECT = "random_and_integer"
TASK = "ch06a.3"
EDITS = [("1 - y.to(scores.dtype) * scores", "1 - y * scores")]
