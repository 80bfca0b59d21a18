"""A 0-d label tensor is read with int() and mapped like an int label: the value is right,
but it comes back as a Python int, so one Dataset's targets change type under augmentation."""

EXPECT = r"0-d"
SELECT = "flip or label"
TASK = "ch05a.3"


def flip_with_label(image, label):
    flipped = torch.flip(image, dims=[-1])
    if isinstance(label, torch.Tensor) and label.dim() > 0:
        new = label.clone()
        new[label == LEFT] = RIGHT
        new[label == RIGHT] = LEFT
        return flipped, new
    value = int(label)
    return flipped, {LEFT: RIGHT, RIGHT: LEFT}.get(value, value)
