"""max(0, .) written as torch.max against torch.tensor(0.0) (held-out round 12): a 0-d
float32 zero loses the promotion to scores with axes, but beside a 0-d float16 or
bfloat16 score it wins, and that loss comes back float32."""

EXPECT = r"returned a torch\.float32 loss for torch\.(b?float16) scores.*type promotion"
SELECT = "random_and_integer"
TASK = "ch06a.3"
EDITS = [
    (
        "torch.clamp(1 - y.to(scores.dtype) * scores, min=0)",
        "torch.max(1 - y.to(scores.dtype) * scores, torch.tensor(0.0))",
    )
]
