"""Answers the "sum" of an empty batch with a fresh torch.tensor(0.0): the right value,
in the default float32, whatever the scores' dtype."""

EXPECT = r"scores\[0\] torch\.\w+, y torch\.\w+, 'sum'\).*returned a torch\.float32 loss"
SELECT = "random_and_integer"
TASK = "ch06a.3"
EDITS = [
    (
        '    if reduction == "sum":\n',
        '    if reduction == "sum" and losses.numel() == 0:\n'
        "        return torch.tensor(0.0)\n"
        '    if reduction == "sum":\n',
    )
]
