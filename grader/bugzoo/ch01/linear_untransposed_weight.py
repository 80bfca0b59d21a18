"""The spec's wrong answer: x @ W with W stored [out, in]; legal whenever in == out."""

EXPECT = r"\[out, in\]|one row per output"
SELECT = "batch_linear"


def batch_linear(x, W, b):
    return x @ W + b
