"""Casts the labels with .float() before multiplying (integer labels "must be floats"):
float64 scores still give a float64 loss, but float16 and bfloat16 scores are promoted
to a float32 loss, with axes or without."""

EXPECT = r"returned a torch\.float32 loss for torch\.(b?float16) scores.*type promotion"
SELECT = "random_and_integer"
TASK = "ch06a.3"
EDITS = [("1 - y.to(scores.dtype) * scores", "1 - y.float() * scores")]
