"""The label is flipped as if the task were binary (1 - label): LEFT and RIGHT swap, but UP
and DOWN become -1 and -2."""

EXPECT = r"UP and DOWN"
SELECT = "flip"


def flip_with_label(image, label):
    return torch.flip(image, dims=[-1]), 1 - label
